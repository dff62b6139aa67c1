package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// nacProc is one run of the nac binary, its output appended to a log file.
type nacProc struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping atomic.Bool
	started  time.Time
}

// startNac starts bin with args and env, its output appended to logPath.
// When the process exits without stop having been called, onExit is called
// with the log's tail (the controller stopping on its own ends the run).
func startNac(bin string, args, env []string, logPath string, onExit func(error)) (*nacProc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &nacProc{cmd: cmd, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting nac: %w", err)
	}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
		if !p.stopping.Load() {
			data, _ := os.ReadFile(logPath)
			onExit(fmt.Errorf("nac exited: %s", tail(string(data), 2000)))
		}
	}()
	return p, nil
}

// pid returns the process id.
func (p *nacProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the process to exit; after 60 s it is
// killed.
func (p *nacProc) stop() {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitReady polls http://addr/readyz every 20 ms until it answers 200 and
// returns the time from the process's start.
func (p *nacProc) waitReady(ctx context.Context, addr string) (time.Duration, error) {
	cl := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for nac's /readyz: %w", context.Cause(ctx))
		case <-p.exited:
			return 0, fmt.Errorf("nac exited before it was ready")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
