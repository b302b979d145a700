package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
)

// promotionCheckEvery is how often a running agent looks for a newer
// promoted version of the registry models its policy follows.
const promotionCheckEvery = time.Minute

// watchPromotions warns, once per version, when a model the configured
// spec follows by its promoted version (model:NAME, model:NAME@promoted)
// is promoted to another version than running (the spec as pinned at
// start, model:NAME@V) names: the agent keeps running the version it
// started with until it restarts, and an operator who promoted expects
// otherwise. A spec naming its versions is never warned about. It returns
// when ctx ends.
func watchPromotions(ctx context.Context, spec, running string, info func(ref string) (models.Model, error), log *slog.Logger, every time.Duration) {
	followed := promotedRefs(spec, running)
	if len(followed) == 0 {
		return
	}
	warned := map[string]int{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for name, v := range followed {
			m, err := info(name + "@promoted")
			if err != nil || m.Version <= 0 || m.Version == v || warned[name] == m.Version {
				continue
			}
			warned[name] = m.Version
			log.Warn(fmt.Sprintf("model %s@%d has been promoted; this agent runs model:%s@%d until it restarts", name, m.Version, name, v),
				"model", name, "promoted", m.Version, "running", v)
		}
	}
}

// promotedRefs are the models spec follows by their promoted version,
// each with the version running (the pinned spec) names.
func promotedRefs(spec, running string) map[string]int {
	sp, err := policy.ParseSpec(spec)
	if err != nil {
		return nil
	}
	pinned := map[string]int{}
	if rp, err := policy.ParseSpec(running); err == nil {
		for _, ref := range rp.Models() {
			name, ver, ok := strings.Cut(ref, "@")
			var v int
			if _, err := fmt.Sscanf(ver, "%d", &v); ok && err == nil && v > 0 {
				pinned[name] = v
			}
		}
	}
	out := map[string]int{}
	for _, ref := range sp.Models() {
		name, ver, _ := strings.Cut(ref, "@")
		if (ver == "" || ver == "promoted") && pinned[name] > 0 {
			out[name] = pinned[name]
		}
	}
	return out
}
