package replay

import (
	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Call is what a client holds for one tool call after applying every
// revision: the last revision, with each text field reassembled from the
// appends and replacements of all revisions.
type Call struct {
	Last      *pb.ShellExec
	Revisions int
}

// Fold applies revisions in order with the public fold package, as a client
// would, and returns the calls in the order they first appeared, and the
// frame errors. A revision out of order is skipped (fold.Folder refuses it);
// the golden tests check the numbering separately.
func Fold(resps []*pb.NormalizeResponse) ([]*Call, []*pb.FrameError) {
	var f fold.Folder
	var errs []*pb.FrameError
	applied := map[fold.Key]int{}
	for _, r := range resps {
		if fe := r.GetFrameError(); fe != nil {
			errs = append(errs, fe)
			continue
		}
		if x := r.GetShellExec(); x != nil && f.Apply(x) == nil {
			applied[fold.KeyOf(x)]++
		}
	}
	var calls []*Call
	for _, k := range f.Calls() {
		calls = append(calls, &Call{Last: f.State(k), Revisions: applied[k]})
	}
	return calls, errs
}
