package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A request a web page sent (Origin, Sec-Fetch-Site) to an endpoint that
// changes what the agent does is refused: any page an operator had open
// approved 18 changes "by evil" with a plain form post. The CLI and curl
// (neither header; Sec-Fetch-Site none for an address typed in) pass.
func TestNotFromBrowser(t *testing.T) {
	called := 0
	h := NotFromBrowser(func(w http.ResponseWriter, r *http.Request) { called++ })
	for _, c := range []struct {
		hdr  map[string]string
		pass bool
	}{
		{nil, true},
		{map[string]string{"Sec-Fetch-Site": "none"}, true},
		{map[string]string{"Origin": "http://evil.example"}, false},
		{map[string]string{"Origin": "http://127.0.0.1:9273"}, false}, // DNS rebinding looks same-origin
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
	} {
		called = 0
		r := httptest.NewRequest(http.MethodPost, "/approve", strings.NewReader(url.Values{"by": {"evil"}, "all": {"true"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h(w, r)
		if (called == 1) != c.pass || (!c.pass && (w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "from a web page"))) {
			t.Errorf("%v: handler called %d times, %d %s", c.hdr, called, w.Code, w.Body.String())
		}
	}
}

// by and reason are journaled and shown on /healthz: control characters
// (forged lines, terminal escapes) are refused.
func TestFormTextRefusesControlCharacters(t *testing.T) {
	for _, v := range []string{"ops\x1b[2J", "line1\nok", "a\tb"} {
		r := httptest.NewRequest(http.MethodPost, "/pause", strings.NewReader(url.Values{"by": {v}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if _, err := formText(r, "by", 128, "required"); err == nil || !strings.Contains(err.Error(), "control characters") {
			t.Errorf("%q: %v", v, err)
		}
	}
}
