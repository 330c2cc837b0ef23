package main

// Prometheus text format, just enough of it to read the applier's and the apiserver's /metrics.

import (
	"strconv"
	"strings"
)

// Prometheus text format, just enough of it.

// promSample is one sample of the text format: name, labels and value.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// promSnap is one scrape's samples.
type promSnap []promSample

// parseProm reads the samples of text; lines it cannot read are skipped.
func parseProm(text string) promSnap {
	var out promSnap
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := promSample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			s.name = line[:i]
			rest = line[i:]
		} else {
			continue
		}
		if rest[0] == '{' {
			j := 1
			for j < len(rest) && rest[j] != '}' {
				k := j
				for k < len(rest) && rest[k] != '=' {
					k++
				}
				key := strings.TrimSpace(strings.TrimPrefix(rest[j:k], ","))
				if k+1 >= len(rest) || rest[k+1] != '"' {
					break
				}
				var val strings.Builder
				m := k + 2
				for m < len(rest) && rest[m] != '"' {
					if rest[m] == '\\' && m+1 < len(rest) {
						m++
						switch rest[m] {
						case 'n':
							val.WriteByte('\n')
						default:
							val.WriteByte(rest[m])
						}
					} else {
						val.WriteByte(rest[m])
					}
					m++
				}
				s.labels[key] = val.String()
				j = m + 1
				if j < len(rest) && rest[j] == ',' {
					j++
				}
			}
			if j >= len(rest) {
				continue
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// sum adds the samples of name whose labels include match.
func (p promSnap) sum(name string, match map[string]string) float64 {
	var t float64
	for _, s := range p {
		if s.name == name && labelsMatch(s.labels, match) {
			t += s.value
		}
	}
	return t
}

// by sums the samples of name whose labels include match, grouped by label.
func (p promSnap) by(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range p {
		if s.name == name && labelsMatch(s.labels, match) {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// diffBy is after minus before of name's samples matching match, grouped by label; zero
// differences are left out.
func diffBy(before, after promSnap, name, label string, match map[string]string) map[string]float64 {
	a, bb := after.by(name, label, match), before.by(name, label, match)
	out := map[string]float64{}
	for k, v := range a {
		if d := v - bb[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
