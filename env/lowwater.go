package env

// LowWater keeps the last N positive values of a quantity that moves with
// load (a PG's XOFF, a dynamic threshold) and answers the lowest: a
// setting planned under it holds while the quantity dips again.
type LowWater struct {
	N    int
	vals []int64
}

// Note keeps x when positive (unknown values are not kept).
func (w *LowWater) Note(x int64) {
	if x <= 0 {
		return
	}
	if n := max(w.N, 1); len(w.vals) >= n {
		w.vals = append(w.vals[:0], w.vals[len(w.vals)-n+1:]...)
	}
	w.vals = append(w.vals, x)
}

// Low is the lowest of the kept values and now (now when none is kept; 0:
// unknown now).
func (w *LowWater) Low(now int64) int64 {
	if now <= 0 {
		return now
	}
	for _, v := range w.vals {
		now = min(now, v)
	}
	return now
}

// High is the highest of the kept values and now (0: none kept and now
// unknown).
func (w *LowWater) High(now int64) int64 {
	for _, v := range w.vals {
		now = max(now, v)
	}
	return now
}
