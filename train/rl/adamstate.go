package rl

import (
	"fmt"
	"reflect"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// adamState is what a gorgonia AdamSolver remembers between steps: the
// step count (for bias correction) and, per parameter, the running means
// and variances of its gradients.
//
// gorgonia v0.9.18 keeps these in unexported fields (iter int; cache
// []*dualValue, where a dualValue embeds the mean as Value and holds the
// variance in d). Checkpoints need them for a resumed run to continue
// exactly where it stopped, so adamExport and adamImport reach them with
// reflection. Both check the layout they expect and report
// errAdamLayout when it differs (another gorgonia version): checkpoints
// then carry no moments, and a resumed run restarts them.
type adamState struct {
	iter  int
	means [][]float32 // nil entries: parameter never stepped
	vars  [][]float32
}

var errAdamLayout = fmt.Errorf("rl: gorgonia AdamSolver layout not recognised: optimiser moments cannot be saved")

// adamFields returns writable views of the solver's iter and cache
// fields after checking their types.
func adamFields(s *G.AdamSolver) (iter, cache reflect.Value, err error) {
	rv := reflect.ValueOf(s).Elem()
	it := rv.FieldByName("iter")
	ca := rv.FieldByName("cache")
	if !it.IsValid() || it.Kind() != reflect.Int || !ca.IsValid() || ca.Kind() != reflect.Slice ||
		ca.Type().Elem().Kind() != reflect.Pointer {
		return iter, cache, errAdamLayout
	}
	dv := ca.Type().Elem().Elem()
	valueT := reflect.TypeOf((*G.Value)(nil)).Elem()
	if dv.Kind() != reflect.Struct || dv.NumField() != 2 || dv.Field(0).Type != valueT || !dv.Field(0).Anonymous ||
		dv.Field(1).Type != valueT || dv.Field(1).Name != "d" {
		return iter, cache, errAdamLayout
	}
	iter = reflect.NewAt(it.Type(), unsafe.Pointer(it.UnsafeAddr())).Elem()
	cache = reflect.NewAt(ca.Type(), unsafe.Pointer(ca.UnsafeAddr())).Elem()
	return iter, cache, nil
}

func writable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// adamExport copies the solver's moments. sizes are the parameter sizes
// in model order.
func adamExport(s *G.AdamSolver, sizes []int) (*adamState, error) {
	iter, cache, err := adamFields(s)
	if err != nil {
		return nil, err
	}
	st := &adamState{iter: int(iter.Int()), means: make([][]float32, len(sizes)), vars: make([][]float32, len(sizes))}
	if cache.Len() == 0 {
		return st, nil
	}
	if cache.Len() != len(sizes) {
		return nil, fmt.Errorf("rl: adam cache has %d entries, the model %d parameters", cache.Len(), len(sizes))
	}
	for i := 0; i < cache.Len(); i++ {
		p := cache.Index(i)
		if p.IsNil() {
			continue
		}
		e := writable(p.Elem())
		m, ok1 := e.Field(0).Interface().(G.Value)
		v, ok2 := writable(e.Field(1)).Interface().(G.Value)
		if !ok1 || !ok2 || m == nil || v == nil {
			return nil, errAdamLayout
		}
		md, ok1 := m.Data().([]float32)
		vd, ok2 := v.Data().([]float32)
		if !ok1 || !ok2 || len(md) != sizes[i] || len(vd) != sizes[i] {
			return nil, fmt.Errorf("rl: adam moments of parameter %d do not match its size %d", i, sizes[i])
		}
		st.means[i] = append([]float32(nil), md...)
		st.vars[i] = append([]float32(nil), vd...)
	}
	return st, nil
}

// adamImport installs moments into a fresh solver for the given model
// nodes.
func adamImport(s *G.AdamSolver, st *adamState, nodes G.Nodes) error {
	iter, cache, err := adamFields(s)
	if err != nil {
		return err
	}
	if len(st.means) != len(nodes) || len(st.vars) != len(nodes) {
		return fmt.Errorf("rl: adam state has %d parameters, the model %d", len(st.means), len(nodes))
	}
	iter.SetInt(int64(st.iter))
	stepped := false
	for _, m := range st.means {
		stepped = stepped || m != nil
	}
	if !stepped {
		cache.Set(reflect.Zero(cache.Type()))
		return nil
	}
	sl := reflect.MakeSlice(cache.Type(), len(nodes), len(nodes))
	for i, n := range nodes {
		if st.means[i] == nil {
			continue
		}
		shape := n.Shape().Clone()
		if len(st.means[i]) != shape.TotalSize() || len(st.vars[i]) != shape.TotalSize() {
			return fmt.Errorf("rl: adam moments of %s have %d values, the parameter %d", n.Name(), len(st.means[i]), shape.TotalSize())
		}
		dv := reflect.New(cache.Type().Elem().Elem())
		mt := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), st.means[i]...)))
		vt := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), st.vars[i]...)))
		writable(dv.Elem().Field(0)).Set(reflect.ValueOf(G.Value(mt)))
		writable(dv.Elem().Field(1)).Set(reflect.ValueOf(G.Value(vt)))
		sl.Index(i).Set(dv)
	}
	cache.Set(sl)
	return nil
}
