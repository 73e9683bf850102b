package geo

import (
	"math"
	"strconv"
	"strings"
)

// Decimals is the coordinate precision kept on write (docs/api.md §2.2 and §8: rounded to 5
// decimals, about 1 m, on write).
const Decimals = 5

// Round5 rounds v to Decimals decimal places, half away from zero, and never returns -0.
//
// It rounds the decimal number v prints as (the shortest representation that reads back as v,
// which is what a client wrote in its JSON), not v's binary value: 0.000015 is stored in binary
// as 1.4999…e-05, and scaling by 1e5 and calling math.Round would give 0.00001, where anyone
// reading the request expects 0.00002. NaN and ±Inf are returned unchanged.
func Round5(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= Decimals {
		return v + 0 // already exact; "+ 0" turns -0 into 0
	}
	roundUp := frac[Decimals] >= '5' // the first dropped digit decides; a tie goes away from zero
	digits := []byte(intPart + frac[:Decimals])
	if roundUp {
		digits = incrementDecimal(digits)
	}
	n := len(digits) - Decimals
	out, err := strconv.ParseFloat(string(digits[:n])+"."+string(digits[n:]), 64)
	if err != nil {
		// Unreachable: the string is built from FormatFloat's own digits.
		return v
	}
	if neg {
		out = -out
	}
	return out + 0
}

// incrementDecimal adds one unit in the last place to a string of decimal digits, growing it
// by a leading 1 when every digit carries (99999 -> 100000).
func incrementDecimal(d []byte) []byte {
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] != '9' {
			d[i]++
			return d
		}
		d[i] = '0'
	}
	return append([]byte{'1'}, d...)
}
