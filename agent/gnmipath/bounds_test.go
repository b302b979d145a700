package gnmipath

import (
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// matchSlow is the definition of Match, tried the naive way: "..."
// stands for any number of elements, the pattern is a prefix.
func matchSlow(pattern, leaf []*gnmi.PathElem) bool {
	if len(pattern) == 0 {
		return true
	}
	if pattern[0].GetName() == "..." {
		for j := 0; j <= len(leaf); j++ {
			if matchSlow(pattern[1:], leaf[j:]) {
				return true
			}
		}
		return false
	}
	return len(leaf) > 0 && Match(pattern[:1], leaf[:1]) && matchSlow(pattern[1:], leaf[1:])
}

// A pattern of many "..." elements is matched in time linear in its
// length: a Get or Subscribe path is client input, and the recursive
// matcher took time exponential in the number of "..." (12 of them: 10 ms
// per leaf; 40: hours).
func TestMatchEllipsesBounded(t *testing.T) {
	_, leaf, _ := ParsePath("/qos/interfaces/interface[interface-id=Ethernet8]/output/queues/queue[name=3]/state/transmit-pkts")
	for _, s := range []string{
		strings.Repeat("/...", 40) + "/nowhere",
		strings.Repeat("/*/...", 40),
		strings.Repeat("/...", 40) + "/state/transmit-pkts",
	} {
		_, pat, err := ParsePath(s)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan bool, 1)
		go func() { done <- Match(pat, leaf) }()
		select {
		case got := <-done:
			want := strings.HasSuffix(s, "transmit-pkts")
			if got != want {
				t.Errorf("Match(%.30s...) = %v, want %v", s, got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("Match(%.30s...) still running after 2 s", s)
		}
	}
	// Same answers as the definition on small patterns.
	parts := []string{"...", "qos", "*", "interfaces", "interface[interface-id=Ethernet8]", "queue[name=4]", "state", "transmit-pkts"}
	var pats []string
	var grow func(p string, n int)
	grow = func(p string, n int) {
		pats = append(pats, p)
		if n == 0 {
			return
		}
		for _, x := range parts {
			grow(p+"/"+x, n-1)
		}
	}
	grow("", 4)
	for _, s := range pats {
		_, pat, _ := ParsePath(s)
		if got, want := Match(pat, leaf), matchSlow(pat, leaf); got != want {
			t.Errorf("Match(%s) = %v, want %v", s, got, want)
		}
	}
}
