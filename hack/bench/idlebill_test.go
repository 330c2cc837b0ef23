package main

import "testing"

// TestAWSIndexUnits: an index Scan is billed per page (at most 1,000 items and 1 MB), each
// page's bytes rounded up to 4 KB and halved; an empty Scan still costs 0.5.
func TestAWSIndexUnits(t *testing.T) {
	repeat := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	tests := []struct {
		name  string
		sizes []int
		want  float64
	}{
		{"empty", nil, 0.5},
		{"one small item", []int{200}, 0.5},
		{"1,000 items of 200 B: one page of 200,000 B: ceil(48.8) / 2", repeat(1000, 200), 24.5},
		{"10,000 items of 200 B: ten pages", repeat(10000, 200), 245},
		{"1 MB caps a page", repeat(3, 600_000), 3 * 73.5},
	}
	for _, tt := range tests {
		if got := awsIndexUnits(tt.sizes); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
