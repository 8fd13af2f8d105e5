package runner

import (
	"fmt"
	"strconv"
	"time"

	"github.com/locklab/locklab/scenarios"
)

type faultPoint struct {
	params map[string]string
	faults []scenarios.Fault
}

// faultPoints expands the scenario's fault-parameter sweeps into the
// cartesian product of their values; without any it is the scenario's own
// faults once.
func faultPoints(sc *scenarios.Scenario) []faultPoint {
	pts := []faultPoint{{params: map[string]string{}, faults: sc.Faults}}
	if sc.Sweep == nil {
		return pts
	}
	for _, sp := range sc.Sweep.Params {
		var next []faultPoint
		for _, p := range pts {
			for _, v := range sp.Values {
				fs := append([]scenarios.Fault(nil), p.faults...)
				if sp.Fault >= 0 && sp.Fault < len(fs) {
					// values were validated by the loader; a failure here
					// leaves the fault as written.
					_ = setField(&fs[sp.Fault], sp.Field, v)
				}
				params := map[string]string{}
				for k, pv := range p.params {
					params[k] = pv
				}
				params[fmt.Sprintf("faults[%d].%s", sp.Fault, sp.Field)] = v
				next = append(next, faultPoint{params: params, faults: fs})
			}
		}
		pts = next
	}
	return pts
}

// setField sets one fault field from its written value.
func setField(f *scenarios.Fault, field, v string) error {
	dur := func(dst *time.Duration) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*dst = d
		return nil
	}
	switch field {
	case "at":
		return dur(&f.At)
	case "for":
		return dur(&f.For)
	case "latency":
		return dur(&f.Latency)
	case "jitter":
		return dur(&f.Jitter)
	case "delay":
		return dur(&f.Delay)
	case "offset":
		return dur(&f.Offset)
	case "rate_kbps":
		n, err := strconv.Atoi(v)
		f.RateKbps = n
		return err
	case "node":
		f.Node = v
	case "link":
		f.Link = v
	case "client":
		f.Client = v
	case "isolate":
		f.Isolate = v
	default:
		return fmt.Errorf("fault field %q cannot be swept", field)
	}
	return nil
}
