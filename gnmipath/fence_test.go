package gnmipath

import "testing"

func TestFenceRoundTrip(t *testing.T) {
	f := Fence{Writer: "agent-a", Token: 42}
	g, err := ParseFence(f.String())
	if err != nil || g != f {
		t.Fatalf("%q -> %+v, %v", f.String(), g, err)
	}
	for _, bad := range []string{"", "a", "/4", "a/", "a/x", "a/0", "a/-3"} {
		if _, err := ParseFence(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
