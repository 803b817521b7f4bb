package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const clockTick = 100

func procPath(pid int, file string) string {
	if pid == 0 {
		return "/proc/self/" + file
	}
	return fmt.Sprintf("/proc/%d/%s", pid, file)
}

// ProcCPU returns the user plus system CPU time of process pid (0: this
// process) from /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it start
	// after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')'", procPath(pid, "stat"))
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: too few fields", procPath(pid, "stat"))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad utime/stime", procPath(pid, "stat"))
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// PeakRSS returns VmHWM, the peak resident set of process pid, in bytes.
func PeakRSS(pid int) (int64, error) { return statusKB(pid, "VmHWM:") }

// RSS returns VmRSS, the resident set of process pid now, in bytes.
func RSS(pid int) (int64, error) { return statusKB(pid, "VmRSS:") }

// statusKB reads a field given in kB from /proc/PID/status, in bytes.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("%s: no %s", procPath(pid, "status"), strings.TrimSuffix(field, ":"))
}

// ResetPeakRSS sets the peak resident set of process pid back to its
// current resident set (writing 5 to /proc/PID/clear_refs), so that
// PeakRSS reports the peak of what follows. It needs to own the process.
func ResetPeakRSS(pid int) error {
	return os.WriteFile(procPath(pid, "clear_refs"), []byte("5"), 0)
}
