package web

import (
	"strings"
	"testing"
)

// The dashboard defines every term its reasons and tables use, in a
// glossary on the page.
func TestDashboardGlossary(t *testing.T) {
	page, err := webFS.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	i := strings.Index(html, `id="glossary"`)
	if i < 0 {
		t.Fatal("index.html has no glossary (id=\"glossary\")")
	}
	glossary := html[i:]
	for _, term := range []string{"Kmin", "Kmax", "Pmax", "headroom", "alpha", "BDP", "ECN-marked", "PFC-paused",
		"util", "score lead", "probability lead", "confidence", "applied", "wanted", "why", "guard", "hold"} {
		if !strings.Contains(glossary, "<dt>"+term+"</dt>") {
			t.Errorf("the glossary does not define %q", term)
		}
	}
}
