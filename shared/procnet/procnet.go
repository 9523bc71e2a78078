// Package procnet tells which TCP addresses a process and its descendants
// listen on, from Linux's /proc: the local runtimes' tests use it to hold
// that nothing they start (the API, the gateway, the Lambda Runtime API,
// the queue server, DynamoDB Local) is reachable beyond loopback.
package procnet

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ErrUnsupported is returned off Linux, where /proc does not say.
var ErrUnsupported = errors.New("procnet: listening sockets are read from Linux's /proc")

// Listener is one listening TCP socket.
type Listener struct {
	Addr netip.AddrPort
	Pid  int    // the process holding it
	Comm string // that process's command name
}

// Loopback reports whether only this machine can reach the listener.
func (l Listener) Loopback() bool { return l.Addr.Addr().Unmap().IsLoopback() }

func (l Listener) String() string { return fmt.Sprintf("%s (pid %d, %s)", l.Addr, l.Pid, l.Comm) }

// Listeners returns the listening TCP sockets (IPv4 and IPv6) held by pid
// or any process descended from it.
func Listeners(pid int) ([]Listener, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	owners := map[string]int{} // socket inode -> pid
	for _, p := range descendants(pid) {
		fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p), "fd"))
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(target, "socket:[") {
				owners[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = p
			}
		}
	}
	var out []Listener
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		rows, err := listening(table)
		if err != nil {
			return nil, err
		}
		for inode, addr := range rows {
			if p, ok := owners[inode]; ok {
				out = append(out, Listener{Addr: addr, Pid: p, Comm: comm(p)})
			}
		}
	}
	return out, nil
}

// descendants returns pid and every process below it.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}

// listening reads one of /proc/net/tcp{,6}: the inode and local address of
// each socket in state LISTEN (0A).
func listening(path string) (map[string]netip.AddrPort, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) { // no IPv6 on this kernel
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]netip.AddrPort{}
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		addr, err := parseAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, f[1], err)
		}
		out[f[9]] = addr
	}
	return out, sc.Err()
}

// parseAddr reads the kernel's hex address:port; the address is in host
// byte order, 32 bits at a time (little-endian on the machines this runs on).
func parseAddr(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	raw, err := hex.DecodeString(host)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, errors.New("bad address")
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, errors.New("bad port")
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(p)), nil
}
