package units

import "testing"

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"builtin", "builtin", 0}, {"buitin", "builtin", 1}, {"biultin", "builtin", 1}, {"", "abc", 3}, {"kmin", "kmax", 2}} {
		if d := EditDistance(c.a, c.b); d != c.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}
