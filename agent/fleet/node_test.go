package fleet

import (
	"context"
	"strings"
	"testing"
)

// A fleet name or member id of . or .. is refused before etcd is asked:
// prefixOf's path.Join cleans them away (fleet "." would read and write
// every fleet's keys), and Drain refuses such a member too.
func TestDotNamesRefused(t *testing.T) {
	for _, c := range []struct{ name, member string }{{".", "a"}, {"..", "a"}, {"dc1", "."}, {"dc1", ".."}} {
		cfg := testConfig(c.member, 1)
		cfg.Name = c.name
		if _, err := Join(context.Background(), nil, cfg); err == nil || !strings.Contains(err.Error(), "nor be . or ..") {
			t.Errorf("name %q member %q: %v", c.name, c.member, err)
		}
	}
	if err := Drain(context.Background(), nil, "dc1", "..", true); err == nil || !strings.Contains(err.Error(), "want a member id") {
		t.Errorf("drain of member ..: %v", err)
	}
}
