import { describe, expect, it } from 'vitest';
import { addressPermitted, type HostPattern, matchHost, parseHostPattern } from './host-allow-list.js';

function patterns(...entries: string[]): HostPattern[] {
  return entries.map((entry) => {
    const parsed = parseHostPattern(entry);
    if (typeof parsed === 'string') throw new Error(parsed);
    return parsed;
  });
}

describe('allowHosts entries', () => {
  it('parses names, wildcards, ports and IP literals', () => {
    expect(parseHostPattern('API.Example.com.')).toMatchObject({
      host: 'api.example.com',
      wildcard: false,
      ports: [80, 443],
      address: false,
    });
    expect(parseHostPattern('*.github.com:443')).toMatchObject({ host: 'github.com', wildcard: true, ports: [443] });
    expect(parseHostPattern('localhost:*')).toMatchObject({ host: 'localhost', ports: 'any' });
    expect(parseHostPattern('203.0.113.7:8443')).toMatchObject({ host: '203.0.113.7', ports: [8443], address: true });
    expect(parseHostPattern('[2001:DB8:0::1]:443')).toMatchObject({ host: '2001:db8::1', address: true });
  });

  it('says what is wrong with a bad entry', () => {
    for (const entry of [
      '',
      '*',
      'a.*.com',
      'host:0',
      'host:70000',
      'host:https',
      '[not-v6]:1',
      'http://x.com',
      'a b',
    ]) {
      expect(typeof parseHostPattern(entry), entry).toBe('string');
    }
  });

  it('matches a host and port only as listed', () => {
    const allow = patterns('api.example.com', '*.github.com:443', 'localhost:8080', '203.0.113.7:22');
    expect(matchHost(allow, 'API.example.com.', 443)?.entry).toBe('api.example.com');
    expect(matchHost(allow, 'api.example.com', 80)).toBeDefined();
    expect(matchHost(allow, 'api.example.com', 8443)).toBeUndefined();
    expect(matchHost(allow, 'evil-api.example.com', 443)).toBeUndefined();
    expect(matchHost(allow, 'a.b.github.com', 443)?.entry).toBe('*.github.com:443');
    expect(matchHost(allow, 'github.com', 443)).toBeUndefined();
    expect(matchHost(allow, 'github.com.evil.net', 443)).toBeUndefined();
    expect(matchHost(allow, 'localhost', 8080)).toBeDefined();
    expect(matchHost(allow, '127.0.0.1', 8080)).toBeUndefined();
    expect(matchHost(allow, '203.0.113.7', 22)).toBeDefined();
    expect(matchHost(allow, '[::1]', 8080)).toBeUndefined();
  });
});

describe('addresses a listed name may reach', () => {
  const [name, localhost, literal] = patterns('api.example.com', 'localhost:8080', '10.1.2.3:443') as [
    HostPattern,
    HostPattern,
    HostPattern,
  ];

  it('lets a name other than localhost reach public addresses only', () => {
    expect(addressPermitted(name, '93.184.216.34')).toBe(true);
    expect(addressPermitted(name, '2606:2800:220:1:248:1893:25c8:1946')).toBe(true);
    for (const address of [
      '127.0.0.1',
      '10.0.0.5',
      '172.20.1.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
    ]) {
      expect(addressPermitted(name, address), address).toBe(false);
    }
  });

  it('lets localhost reach loopback only, and an IP literal itself', () => {
    expect(addressPermitted(localhost, '127.0.0.1')).toBe(true);
    expect(addressPermitted(localhost, '::1')).toBe(true);
    expect(addressPermitted(localhost, '93.184.216.34')).toBe(false);
    expect(addressPermitted(localhost, '10.0.0.1')).toBe(false);
    expect(addressPermitted(literal, '10.1.2.3')).toBe(true);
  });
});
