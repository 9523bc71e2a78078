package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// privateMode is the mode of the files the importer writes: the state and
// the report hold names, e-mail addresses and ids of a firm's clients.
const privateMode = 0o600

// openPrivate opens a file the importer writes (the state file, the
// report) for flag (os.O_* bits), created 0600, and refuses:
//   - a symbolic link anywhere in its path, the folders included: each
//     folder is opened from the one before it (openat) with O_NOFOLLOW, so
//     a link planted at the name, or a folder swapped for a link, cannot
//     make it truncate or append to a file elsewhere;
//   - anything but a regular file: a FIFO (which would block open() for
//     as long as nobody reads it, deaf to SIGTERM), a device, a socket.
//     The file is opened non-blocking, then checked with fstat, so the
//     check is of the file opened, not of a name that may change.
//
// An existing file is narrowed to 0600 (an older importer made them 0644).
func openPrivate(path string, flag int, what string) (*os.File, error) {
	f, err := openPlain(path, flag, what)
	if err != nil {
		return nil, err
	}
	if err := narrow(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// narrow makes f 0600 if it is not.
func narrow(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != privateMode {
		return f.Chmod(privateMode)
	}
	return nil
}

// openPlain is openPrivate without narrowing an existing file: for a
// state file, whose content is checked first (a report fed back names its
// state, and a crafted one could name any file).
func openPlain(path string, flag int, what string) (*os.File, error) {
	dirfd, name, err := walkNoFollow(path, what)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, privateMode)
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK):
		return nil, linkError(path, path, what)
	case errors.Is(err, unix.ENXIO): // a FIFO opened for writing with no reader
		return nil, notRegular(path, "a named pipe (FIFO)", what)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, notRegular(path, fileKind(st.Mode), what)
	}
	// Back to blocking I/O (a regular file ignores O_NONBLOCK; clear it so
	// the descriptor behaves as os.OpenFile's would).
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// walkNoFollow opens the folders of path one by one, none through a
// symbolic link, and returns the last one's descriptor and the file's
// name in it.
func walkNoFollow(path, what string) (int, string, error) {
	clean := filepath.Clean(path)
	dir, name := filepath.Split(clean)
	if name == "" || name == "." || name == ".." {
		return -1, "", fmt.Errorf("the %s %s is not a file name", what, path)
	}
	start := "."
	if filepath.IsAbs(clean) {
		start = "/"
	}
	fd, err := unix.Open(start, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: start, Err: err}
	}
	walked := strings.TrimSuffix(start, ".")
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" || part == "." {
			continue
		}
		walked = filepath.Join(walked, part)
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			var st unix.Stat_t
			if unix.Lstat(walked, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, "", linkError(path, walked, what)
			}
			return -1, "", &os.PathError{Op: "open", Path: walked, Err: err}
		}
		unix.Close(fd)
		fd = next
	}
	return fd, name, nil
}

// linkError says which part of path is a symbolic link, and the path
// without links to name instead when the user means where it points.
func linkError(path, link, what string) error {
	hint := "name a path without links"
	if real, err := filepath.EvalSymlinks(path); err == nil {
		hint = "if that is where you mean, name it as " + real
	} else if real, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		hint = "if that is where you mean, name it as " + filepath.Join(real, filepath.Base(path))
	}
	if link == path {
		return fmt.Errorf("the %s %s is a symbolic link; the importer writes only to a plain file, through no link (%s, or remove the link)", what, path, hint)
	}
	return fmt.Errorf("the %s %s is reached through a symbolic link, %s; the importer writes through no link (%s)", what, path, link, hint)
}

func notRegular(path, kind, what string) error {
	return fmt.Errorf("the %s %s is %s, not a regular file; the importer writes only to a regular file: name another", what, path, kind)
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a named pipe (FIFO)"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a folder"
	}
	return "not a plain file"
}
