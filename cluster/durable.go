package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeDurable writes a server's own file (its config, its id) and
// fsyncs it and its folder before returning: a node's folder may lie on
// the lossy filesystem of a power cut, which drops every write never
// fsynced, and a server must come back with its config, not an empty file.
func writeDurable(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", filepath.Dir(path), err)
	}
	return nil
}
