package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The dashboard's page comes with its pictures: the fabric heatmap and the
// most congested queue's chart inline (data: URLs) and the overview as
// JSON, so that the page is complete at load (a screenshot taken then is
// not empty) and app.js only refreshes it.

// Marks in index.html that page replaces.
const (
	heatmapImg = `<img id="heatmap" alt="fabric heatmap" src="">`
	queueImg   = `<img id="queue-chart" alt="queue time series" src="" hidden>`
	appScript  = `<script src="/static/app.js"></script>`
)

// inlineImg is an img element with the PNG b inline, data-src naming the
// URL app.js would draw it from (so that it does not fetch it again).
func inlineImg(id, alt, src string, b []byte) string {
	return `<img id="` + id + `" alt="` + alt + `" src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(b) +
		`" data-src="` + template.HTMLEscapeString(src) + `">`
}

// picture renders (or takes from c) the picture of path?query.
func (a *server) picture(c *pngCache, newest int64, path, query string, render func(*http.Request) ([]byte, error)) ([]byte, error) {
	r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: query}}
	return c.get(newest, path+"?"+query, func() ([]byte, error) { return render(r) })
}

// page is index.html with the newest pictures and overview inline
// (as it is when no interval is recorded yet).
func (a *server) page(c *pngCache) ([]byte, error) {
	raw, err := webFS.ReadFile("static/index.html")
	if err != nil {
		return nil, err
	}
	s := string(raw)
	iv := a.o.History.intervals()
	if len(iv) == 0 {
		return raw, nil
	}
	newest := iv[len(iv)-1]
	v := strconv.FormatInt(newest, 10)
	q := "metric=depth&view=fabric&ago=0&v=" + v
	if b, err := a.picture(c, newest, "/dashboard/heatmap.png", q, a.heatmapPNG); err == nil {
		s = strings.Replace(s, heatmapImg, inlineImg("heatmap", "fabric heatmap", "/dashboard/heatmap.png?"+q, b), 1)
	}
	ov, err := a.overview()
	if err != nil {
		return nil, err
	}
	if len(ov.Hot) > 0 {
		k := ov.Hot[0].Key
		q := "target=" + url.QueryEscape(k.Target) + "&port=" + url.QueryEscape(k.Port) + "&queue=" + strconv.Itoa(k.Queue) + "&v=" + v
		if b, err := a.picture(c, newest, "/dashboard/queue.png", q, a.queuePNG); err == nil {
			s = strings.Replace(s, queueImg, inlineImg("queue-chart", "queue time series", "/dashboard/queue.png?"+q, b), 1)
		}
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(ov); err != nil { // escapes <, > and &: safe in a script element
		return nil, err
	}
	s = strings.Replace(s, appScript, `<script id="initial" type="application/json">`+js.String()+"</script>\n"+appScript, 1)
	return []byte(s), nil
}

// servePage answers GET / with page.
func (a *server) servePage(w http.ResponseWriter, c *pngCache) {
	b, err := a.page(c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
