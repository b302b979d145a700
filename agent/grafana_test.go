package agent

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/agent/metrics"
)

const grafanaDir = "../examples/grafana/"

var metricRef = regexp.MustCompile(`\becntune_[a-zA-Z0-9_]+`)

// grafanaQueries returns every query string of a dashboard: the expr of
// panel targets (nested rows too) and annotations, and the query or
// definition of template variables.
func grafanaQueries(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			grafanaQueries(e, k, out)
		}
	case []any:
		for _, e := range x {
			grafanaQueries(e, key, out)
		}
	case string:
		if key == "expr" || key == "query" || key == "definition" {
			*out = append(*out, x)
		}
	}
}

// unknownMetrics lists the ecntune_ names the queries use that are not
// among names.
func unknownMetrics(queries, names []string) []string {
	var missing []string
	for _, q := range queries {
		for _, m := range metricRef.FindAllString(q, -1) {
			if !slices.Contains(names, m) && !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// dashboard is what the tests read of the shipped Grafana dashboard.
type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		ID      int            `json:"id"`
		Type    string         `json:"type"`
		Title   string         `json:"title"`
		GridPos map[string]int `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// readDashboard parses the dashboard, and returns its bytes too.
func readDashboard(t *testing.T) (dashboard, []byte) {
	t.Helper()
	data, err := os.ReadFile(grafanaDir + "ecntune-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash dashboard
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return dash, data
}

// TestGrafanaQueriesExportedMetrics: the dashboard is valid JSON, every
// panel has a query and a place on the grid, and every metric a query
// names is one the agent exports.
func TestGrafanaQueriesExportedMetrics(t *testing.T) {
	dash, data := readDashboard(t)
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) < 10 {
		t.Fatalf("dashboard uid %q title %q with %d panels", dash.UID, dash.Title, len(dash.Panels))
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{} // grid cell (x, y) -> the panel on it
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g["w"] < 1 || g["x"]+g["w"] > 24 || g["h"] < 1 {
			t.Errorf("panel %q: grid position %v outside the 24-column grid", p.Title, g)
		}
	cover:
		for y := g["y"]; y < g["y"]+g["h"]; y++ {
			for x := g["x"]; x < g["x"]+g["w"]; x++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at (%d, %d)", other, p.Title, x, y)
					break cover
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if len(metricRef.FindAllString(q.Expr, -1)) == 0 {
				t.Errorf("panel %q: query %q names no ecntune metric", p.Title, q.Expr)
			}
		}
	}
	var all any
	json.Unmarshal(data, &all)
	var queries []string
	grafanaQueries(all, "", &queries)
	names := metrics.NewInstruments().MetricNames()
	if missing := unknownMetrics(queries, names); len(missing) > 0 {
		t.Errorf("the dashboard queries metrics the agent does not export: %v", missing)
	}
	// the check itself catches a name that does not exist
	if got := unknownMetrics([]string{`rate(ecntune_queue_depth_bytes_total[1m]) + ecntune_agent_decision_seconds_bucket`}, names); !slices.Equal(got, []string{"ecntune_queue_depth_bytes_total"}) {
		t.Errorf("unknownMetrics found %v, want the one made-up name", got)
	}
	t.Logf("%d panels, %d queries over %d metric names", len(dash.Panels), len(queries), len(names))
}

// TestGrafanaDrawsEverySetting: every gauge of a setting (applied and
// recommended per queue, the range per switch) has a time-series panel,
// so a knob the agent tunes is not left off the dashboard.
func TestGrafanaDrawsEverySetting(t *testing.T) {
	dash, _ := readDashboard(t)
	drawn := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "timeseries" {
			continue
		}
		for _, q := range p.Targets {
			for _, m := range metricRef.FindAllString(q.Expr, -1) {
				drawn[m] = true
			}
		}
	}
	var settings []string
	for _, n := range metrics.NewInstruments().MetricNames() {
		for _, prefix := range []string{"ecntune_queue_applied_", "ecntune_queue_recommended_", "ecntune_target_setting_"} {
			if strings.HasPrefix(n, prefix) {
				settings = append(settings, n)
			}
		}
	}
	if len(settings) != 15 { // kmin, kmax, pmax, headroom, alpha: applied, recommended, range
		t.Fatalf("setting gauges %v, want 15", settings)
	}
	for _, n := range settings {
		if !drawn[n] {
			t.Errorf("no time-series panel draws %s", n)
		}
	}
}

// TestGrafanaProvisioning: the provisioning files are Grafana's format.
func TestGrafanaProvisioning(t *testing.T) {
	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	for f, v := range map[string]any{"provisioning/dashboards/ecntune.yaml": &dp, "provisioning/datasources/prometheus.yaml": &ds} {
		data, err := os.ReadFile(grafanaDir + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, v); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if dp.APIVersion != 1 || len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options.Path == "" {
		t.Errorf("dashboard provider %+v", dp)
	}
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("data source %+v", ds)
	}
}
