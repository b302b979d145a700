package fleetscale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sample is one series of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is a /metrics page, parsed.
type scrape []sample

// getMetrics reads http://addr/metrics, parsed and as it came.
func getMetrics(ctx context.Context, addr string) (scrape, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	sc, err := parseMetrics(bytes.NewReader(raw))
	return sc, raw, err
}

// parseMetrics reads the text exposition format: comments are skipped,
// every other line is name{labels} value [timestamp].
func parseMetrics(r io.Reader) (scrape, error) {
	var out scrape
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w: %q", n, err, line)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseLine(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		rest, err := parseLabels(line[1:], s.labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// parseLabels reads name="value" pairs up to the closing brace into m and
// returns what follows it.
func parseLabels(s string, m map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.Index(s, "=\"")
		if eq < 0 {
			return "", fmt.Errorf("bad labels")
		}
		name := s[:eq]
		s = s[eq+2:]
		var b strings.Builder
		for {
			if s == "" {
				return "", fmt.Errorf("unterminated label value")
			}
			c := s[0]
			s = s[1:]
			if c == '"' {
				break
			}
			if c == '\\' && s != "" {
				switch s[0] {
				case 'n':
					c = '\n'
				default:
					c = s[0]
				}
				s = s[1:]
			}
			b.WriteByte(c)
		}
		m[name] = b.String()
	}
}

// sum adds the series named name whose labels include every pair of want.
func (sc scrape) sum(name string, want ...string) float64 {
	var t float64
	for _, s := range sc {
		if s.name == name && s.match(want) {
			t += s.value
		}
	}
	return t
}

// by sums the series named name (with the labels of want) by the value
// of label.
func (sc scrape) by(name, label string, want ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range sc {
		if s.name == name && s.match(want) {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

func (s sample) match(want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		if s.labels[want[i]] != want[i+1] {
			return false
		}
	}
	return true
}
