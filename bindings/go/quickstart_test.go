package ctxpack_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Go quickstart (Example in example_test.go, also in the README) prints exactly what
// examples/quickstart.c prints. The C program is compiled with $CC (default cc) against
// the library in $CTXPACK_LIB_DIR (default ../../target/release), the one this test
// binary is linked with when run by run.sh.
func TestQuickstartMatchesC(t *testing.T) {
	libDir := os.Getenv("CTXPACK_LIB_DIR")
	if libDir == "" {
		libDir = "../../target/release"
	}
	libDir, _ = filepath.Abs(libDir)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	exe := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command(cc, "-std=c99", "-I../../include", "../../examples/quickstart.c",
		"-L"+libDir, "-lctxpack", "-Wl,-rpath,"+libDir, "-o", exe)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/quickstart.c: %v\n%s", err, out)
	}
	want, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("running the C quickstart: %v", err)
	}
	if got := captureStdout(t, Example); !bytes.Equal(got, want) {
		t.Errorf("Go quickstart printed\n%s\nthe C quickstart\n%s", got, want)
	}
}

func captureStdout(t *testing.T, f func()) []byte {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stdout = saved }()
		f()
	}()
	w.Close()
	return <-done
}
