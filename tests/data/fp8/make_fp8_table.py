#!/usr/bin/env python3
"""Writes fp8_codes.csv: the value of every one of the 256 codes of OCP FP8 e4m3 (e4m3fn) and e5m2.

Independent of flashsim's C++ conversion: the values come from the OCP OFP8 specification's definition
(sign, exponent field, mantissa field, bias) in exact rational arithmetic (fractions), printed with
float.hex so every value is exact. Run: python3 make_fp8_table.py > fp8_codes.csv
"""
from fractions import Fraction


def value(code, exp_bits, man_bits, bias, e4m3fn):
    sign = -1 if code & 0x80 else 1
    e = (code & 0x7F) >> man_bits
    m = code & ((1 << man_bits) - 1)
    top = (1 << exp_bits) - 1
    if e4m3fn and e == top and m == (1 << man_bits) - 1:
        return "nan"
    if not e4m3fn and e == top:
        return "nan" if m else ("-inf" if sign < 0 else "inf")
    if e == 0:  # subnormal: 0.m * 2^(1 - bias)
        v = Fraction(m, 1 << man_bits) * Fraction(2) ** (1 - bias)
    else:  # normal: 1.m * 2^(e - bias)
        v = (1 + Fraction(m, 1 << man_bits)) * Fraction(2) ** (e - bias)
    if v == 0:
        return "-0x0.0p+0" if sign < 0 else "0x0.0p+0"
    f = float(v)
    assert Fraction(f) == v  # every FP8 value is a double
    return float.hex(sign * f)


print("code,e4m3,e5m2")
for c in range(256):
    print(f"{c},{value(c, 4, 3, 7, True)},{value(c, 5, 2, 15, False)}")
