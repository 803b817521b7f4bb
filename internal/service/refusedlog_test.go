package service

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Calls refused for want of credentials are not logged one by one (a
// caller without a token could fill the disk with them): at INFO there is
// one line for a burst of them, with the count; the counter counts each.
// An accepted call is still logged.
func TestRefusedCallsDoNotFloodTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write(t, path, []byte("s3cret-token\n"))
	tok, err := NewToken(path, nil)
	require.NoError(t, err)
	opts := DefaultServerOptions()
	opts.Token = tok
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	logBuf := new(testlog.Buffer)
	srv := NewServer(svc, opts, slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	conn := serveBufconn(t, srv)
	client := pb.NewNormalizerServiceClient(conn)
	bad := func() context.Context {
		return metadata.AppendToOutgoingContext(callCtx(t), "authorization", "Bearer wrong")
	}
	const n = 100
	for range n {
		_, err := client.ListDialects(bad(), &pb.ListDialectsRequest{})
		require.Equal(t, codes.Unauthenticated, status.Code(err))
		st, err := client.Normalize(bad())
		require.NoError(t, err)
		_, err = st.Recv()
		require.Equal(t, codes.Unauthenticated, status.Code(err))
	}
	good := metadata.AppendToOutgoingContext(callCtx(t), "authorization", "Bearer s3cret-token")
	_, err = client.ListDialects(good, &pb.ListDialectsRequest{})
	require.NoError(t, err)
	conn.Close()
	srv.GRPC.GracefulStop()

	log := logBuf.String()
	lines := strings.Count(log, "\n")
	assert.LessOrEqual(t, lines, 5, "%d refused calls made %d log lines:\n%.2000s", 2*n, lines, log)
	assert.Contains(t, log, "refused")
	assert.Contains(t, log, "ListDialects", "the accepted call was not logged")
	assert.EqualValues(t, 2*n, counted(svc.sessions.m, "unauthenticated"))
}
