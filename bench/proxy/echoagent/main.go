// Command echoagent is the synthetic agent of the proxy benchmark: it writes
// back every line it reads, as soon as it has read it, until EOF.
package main

import (
	"bufio"
	"os"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer out.Flush()
	for {
		line, err := in.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a line over the buffer: pass it on in pieces
			out.Write(line)
			line, err = in.ReadSlice('\n')
		}
		out.Write(line)
		if in.Buffered() == 0 {
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}
