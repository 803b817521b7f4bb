package replay

import (
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/protobuf/proto"
)

// Call is what a client holds for one tool call after applying every
// revision: the last revision, with each text field reassembled from the
// appends and replacements of all revisions.
type Call struct {
	Last      *pb.ShellExec
	Revisions int
}

// Fold applies revisions in order, as a client would, and returns the calls
// in the order they first appeared, and the frame errors.
func Fold(resps []*pb.NormalizeResponse) ([]*Call, []*pb.FrameError) {
	var calls []*Call
	var errs []*pb.FrameError
	byID := map[[2]string]*Call{}
	for _, r := range resps {
		if fe := r.GetFrameError(); fe != nil {
			errs = append(errs, fe)
			continue
		}
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		key := [2]string{x.GetSessionId(), x.GetToolCallId()}
		c := byID[key]
		if c == nil {
			c = &Call{Last: &pb.ShellExec{}}
			byID[key] = c
			calls = append(calls, c)
		}
		c.Revisions++
		out, stdout, stderr := c.Last.Output, c.Last.Stdout, c.Last.Stderr
		c.Last = proto.Clone(x).(*pb.ShellExec)
		c.Last.Output = fold(out, x.GetOutput())
		c.Last.Stdout = fold(stdout, x.GetStdout())
		c.Last.Stderr = fold(stderr, x.GetStderr())
	}
	return calls, errs
}

// fold applies one ShellText to what is held.
func fold(held, next *pb.ShellText) *pb.ShellText {
	if next == nil {
		return held
	}
	t := proto.Clone(next).(*pb.ShellText)
	if next.GetMode() == pb.TextMode_TEXT_MODE_APPEND && held != nil {
		t.Text = held.GetText() + next.GetText()
	}
	t.Mode = pb.TextMode_TEXT_MODE_REPLACE
	return t
}
