// Command certgen writes fresh test certificates, keys and tokens into a
// directory for the client suites' TLS and token tests (see
// internal/testcerts for the file names).
//
//	go run ./test/certgen DIR
package main

import (
	"fmt"
	"os"

	"github.com/acpnorm/acpnorm/internal/testcerts"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: certgen DIR")
		os.Exit(2)
	}
	if err := testcerts.Write(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "certgen: %v\n", err)
		os.Exit(1)
	}
}
