package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
)

// runRounds runs every scenario at every stream count against every
// server, rounds times, the servers in the given order in even rounds and
// in reverse in odd ones (so that neither is always the one that runs
// after the other's garbage), and logs each cell's result on stderr with
// line. base says how each cell sends (its Duration, OwnACPIds and Rate;
// the rest is the cell's). failed says a cell saw frame or send errors
// (each printed); err is a run that could not go on (a cell that did not
// start, a signal).
func runRounds(ctx context.Context, rounds int, chosen []*load.Scenario, streams []int, servers []*load.Server, base load.Options, line func(*load.Result) string) (results []*load.Result, failed bool, err error) {
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for round := range rounds {
		for _, s := range chosen {
			for _, c := range streams {
				order := slices.Clone(servers)
				if round%2 == 1 {
					slices.Reverse(order)
				}
				for _, srv := range order {
					o := base
					o.Addr, o.Streams, o.Scenario, o.ServerPID = srv.Addr, c, s, srv.PID()
					o.RunID = fmt.Sprintf("%s-%d-%s-%d", runID, round, s.Name, c)
					r, err := load.Run(ctx, o)
					if err != nil {
						return results, failed, err
					}
					if ctx.Err() != nil {
						return results, failed, ctx.Err()
					}
					r.Server, r.Round = srv.Name, round+1
					results = append(results, r)
					fmt.Fprintf(os.Stderr, "round %d %-10s c=%-2d %s\n", round+1, s.Name, c, line(r))
					if r.Failed() {
						failed = true
						for _, e := range r.Errors {
							fmt.Fprintln(os.Stderr, "   ", e)
						}
					}
				}
			}
		}
	}
	return results, failed, nil
}

// writeResults writes every result and the summary to path as JSON.
func writeResults(path string, results []*load.Result, rows []load.Row) error {
	b, err := json.MarshalIndent(struct {
		Results []*load.Result `json:"results"`
		Summary []load.Row     `json:"summary"`
	}{results, rows}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// errRunFailed is what a run that saw frame or send errors returns.
var errRunFailed = errors.New("errors during the run (see above); speed is never a failure")
