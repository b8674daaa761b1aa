import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyDiscount, cartTotal, subtotal } from '../src/cart.js';

const items = [
  { name: 'book', price: 12.5, quantity: 2 },
  { name: 'pen', price: 1.25, quantity: 4 },
];

test('subtotal adds price times quantity', () => {
  assert.equal(subtotal(items), 30);
});

describe('discounts', () => {
  test('no discount keeps the total', () => {
    assert.equal(cartTotal(items), 30);
  });

  test('ten percent off', () => {
    assert.equal(applyDiscount(200, 10), 180);
  });

  test('half price', () => {
    assert.equal(cartTotal(items, 50), 15);
  });

  test('refuses more than 100 percent', () => {
    assert.throws(() => applyDiscount(10, 120), RangeError);
  });
});
