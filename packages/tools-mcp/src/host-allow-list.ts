import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * One entry of `allowHosts`: `api.example.com`, `api.example.com:8443`, `*.github.com:443`,
 * `host:*`, an IPv4 literal or a bracketed IPv6 literal (`[2001:db8::1]:443`).
 */
export interface HostPattern {
  /** The entry as written. */
  readonly entry: string;
  /** Lower case, without brackets, trailing dot or the `*.` of a wildcard. */
  readonly host: string;
  /** `*.example.com`: any name below `example.com` (not `example.com` itself). */
  readonly wildcard: boolean;
  /** The ports allowed: the given one, `any` for `:*`, else 80 and 443. */
  readonly ports: readonly number[] | 'any';
  /** The entry is an IP literal: that address only, whatever range it is in. */
  readonly address: boolean;
}

/** Without a port an entry allows plain HTTP and HTTPS. */
const DEFAULT_PORTS = [80, 443] as const;
const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const HOST_NAME = new RegExp(`^(\\*\\.)?(${LABEL}(?:\\.${LABEL})*)\\.?$`);
const ENTRY = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\*|\d{1,5}))?$/;

/** A host as a target names it: lower case, no brackets, no trailing dot, IPv6 in its short form. */
export function normalizeHost(host: string): string {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (isIPv6(bare)) return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  return bare.endsWith('.') ? bare.slice(0, -1) : bare;
}

/** Parses one `allowHosts` entry; a string says what is wrong with it. */
export function parseHostPattern(entry: string): HostPattern | string {
  const match = ENTRY.exec(entry.trim().toLowerCase());
  if (!match) return 'expected host, host:port, *.domain[:port] or an IP literal ([v6] in brackets)';
  const [, bracketed, plain, port] = match;
  let ports: HostPattern['ports'] = DEFAULT_PORTS;
  if (port === '*') ports = 'any';
  else if (port !== undefined) {
    const number = Number(port);
    if (number < 1 || number > 65_535) return `port ${port} is not between 1 and 65535`;
    ports = [number];
  }
  if (bracketed !== undefined) {
    if (!isIPv6(bracketed)) return `${bracketed} is not an IPv6 address`;
    return { entry, host: normalizeHost(bracketed), wildcard: false, ports, address: true };
  }
  const host = plain as string;
  if (isIPv4(host)) return { entry, host, wildcard: false, ports, address: true };
  const name = HOST_NAME.exec(host);
  if (!name) return `${host} is not a host name (a wildcard is only allowed as a leading "*.")`;
  return { entry, host: normalizeHost(name[2] as string), wildcard: name[1] !== undefined, ports, address: false };
}

/** The first pattern that lets a connection to `host:port` through, if any. */
export function matchHost(patterns: readonly HostPattern[], host: string, port: number): HostPattern | undefined {
  const target = normalizeHost(host);
  return patterns.find((pattern) => {
    if (pattern.ports !== 'any' && !pattern.ports.includes(port)) return false;
    if (pattern.address) return target === pattern.host;
    if (isIPv4(target) || isIPv6(target)) return false;
    return pattern.wildcard ? target.endsWith(`.${pattern.host}`) : target === pattern.host;
  });
}

/**
 * Addresses that are not the public internet: loopback, private networks, link-local (where
 * cloud metadata services answer), carrier-grade NAT, unique-local, unspecified and multicast.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is judged as the IPv4 address it maps. */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1] as string, family: 'ipv4' };
  return { address, family: isIPv4(address) ? 'ipv4' : 'ipv6' };
}

/**
 * May a name the pattern matched connect to `address` (what the name resolved to)? An IP
 * literal entry is its own address; a public address always; `localhost` only to a loopback address; any other name never to a non-public
 * one, so a listed name that resolves (or is rebound) to 127.0.0.1, a private network or the
 * metadata service does not open a way to them.
 */
export function addressPermitted(pattern: HostPattern, address: string): boolean {
  if (pattern.address) return true;
  const { address: bare, family } = unmapped(address);
  if (pattern.host === 'localhost' && !pattern.wildcard) return LOOPBACK.check(bare, family);
  return !NON_PUBLIC.check(bare, family);
}
