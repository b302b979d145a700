package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/fleet"
)

// fakeDOM is just enough of a document for app.js to load and draw the
// fleet panel in Node.js: elements by id, tables, text.
const fakeDOM = `
const els = {};
function el(tag) {
  const e = { tag, children: [], textContent: "", className: "", hidden: false, style: {}, value: "", options: [],
    classList: { add() {} }, addEventListener() {}, appendChild(c) { this.children.push(c); return c; },
    replaceChildren() { this.children = []; } };
  e.tBodies = [el0()];
  return e;
}
function el0() { return { children: [], appendChild(c) { this.children.push(c); return c; }, replaceChildren() { this.children = []; } }; }
globalThis.document = { getElementById: (id) => els[id] || (els[id] = el(id)), createElement: el, body: { dataset: {} } };
globalThis.fetch = () => new Promise(() => {});
globalThis.setTimeout = () => {};
`

// The fleet panel draws GET /fleet's answer: run app.js's renderFleet in
// Node.js (skipped without node) on a status with two members and read
// what the page would show.
func TestFleetPanelDraws(t *testing.T) {
	st := fleet.Status{Name: "dc1", Leader: "b", Self: "a", Owned: []string{"leaf0", "leaf2"},
		Members: []fleet.MemberStatus{{Member: fleet.Member{ID: "a", Zone: "z1"}, Owns: 2, Assigned: 2, LeaseTTL: 4},
			{Member: fleet.Member{ID: "b", Draining: true}, Leader: true, Owns: 1, Assigned: 0, LeaseTTL: 5}},
		Switches: []fleet.SwitchStatus{{Switch: "leaf0"}, {Switch: "leaf1"}, {Switch: "leaf2"}}}
	b, _ := json.Marshal(st)
	out := runAppScript(t, "", `
renderFleet(`+string(b)+`);
const rows = els["fleet-members"].tBodies[0].children.map((tr) => tr.children.map((td) => String(td.textContent)).join("|"));
console.log(JSON.stringify({ hidden: els["fleet"].hidden, name: els["fleet-name"].textContent, self: els["fleet-self"].textContent,
  role: els["fleet-role"].textContent, leader: els["fleet-leader"].textContent, owned: els["fleet-owned"].textContent,
  n: els["fleet-n-owned"].textContent + "/" + els["fleet-n-switches"].textContent, rows,
  scope: els["window-scope"].hidden ? "" : els["window-scope"].textContent }));
`)
	var got struct {
		Hidden                             bool
		Name, Self, Role, Leader, Owned, N string
		Rows                               []string
		Scope                              string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"a (this agent)|z1|active|2|2|4 s", "b|–|draining, leader|1|0|5 s"}
	if got.Hidden || got.Name != "dc1" || got.Self != "a" || got.Role != "member" || got.Leader != "b" ||
		got.Owned != "leaf0, leaf2" || got.N != "2/3" || strings.Join(got.Rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the panel shows %+v", got)
	}
	// the audit window's counts are the member's own: said in a fleet (a
	// failover dropped the rate by 3/4 in silence)
	if !strings.Contains(got.Scope, "are a's own changes") || !strings.Contains(got.Scope, "agent history --fleet") {
		t.Errorf("the window's scope in a fleet: %q", got.Scope)
	}
}
