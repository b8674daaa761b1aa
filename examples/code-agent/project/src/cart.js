/** Prices are in cents-free units (e.g. 19.99); totals are rounded to two decimals. */

export function subtotal(items) {
  return items.reduce((sum, item) => sum + item.price * item.quantity, 0);
}

/** Takes `percent` percent off `total` (0 to 100). */
export function applyDiscount(total, percent) {
  if (percent < 0 || percent > 100) throw new RangeError('percent must be between 0 and 100');
  return total - percent;
}

export function cartTotal(items, percent = 0) {
  return Math.round(applyDiscount(subtotal(items), percent) * 100) / 100;
}
