package metrics

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments creates observable instruments on one meter and keeps the
// first errors, so register and registerMatrix build their families in a
// list and check once (errs).
type instruments struct {
	m    metric.Meter
	errs []error
}

// datagrams is a counter of datagrams.
func (in *instruments) datagrams(name, desc string) metric.Int64ObservableCounter {
	c, err := in.m.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit("{datagram}"))
	in.errs = append(in.errs, err)
	return c
}

// seconds is a counter of seconds.
func (in *instruments) seconds(name, desc string) metric.Float64ObservableCounter {
	c, err := in.m.Float64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit("s"))
	in.errs = append(in.errs, err)
	return c
}

func (in *instruments) fgauge(name, unit, desc string) metric.Float64ObservableGauge {
	g, err := in.m.Float64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
	in.errs = append(in.errs, err)
	return g
}

func (in *instruments) igauge(name, unit, desc string) metric.Int64ObservableGauge {
	g, err := in.m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
	in.errs = append(in.errs, err)
	return g
}

func (in *instruments) err() error { return errors.Join(in.errs...) }

// observe registers f as the callback that publishes insts at scrape
// time, called under e's lock, once every instrument in was made; the
// errors of those that could not be made are the error otherwise.
func (e *Exporter) observe(in *instruments, f func(metric.Observer), insts ...metric.Observable) error {
	if err := in.err(); err != nil {
		return err
	}
	_, err := in.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		f(o)
		return nil
	}, insts...)
	return err
}
