package main

import (
	"reflect"
	"testing"
)

func TestParseSweep(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", nil, false},
		{"2500,5000,10000", []int{2500, 5000, 10000}, false},
		{" 40000, 2500 ,2500", []int{2500, 40000}, false},
		{"2500,x", nil, true},
		{"0", nil, true},
		{"-5", nil, true},
	} {
		got, err := parseSweep(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSweep(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseWays(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"none,feedback,health", []string{"none", "feedback", "health"}, false},
		{" health, none ,none", []string{"none", "health"}, false}, // optionWays's order, once each
		{"none", []string{"none"}, false},
		{"", nil, true},
		{"none,ready", nil, true},
	} {
		got, err := parseWays(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseWays(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
