package store

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vpc-cni/pool"
)

// Helper processes: the test binary re-executed with helperEnv naming a mode.
const (
	helperEnv    = "VPCCNI_STORE_HELPER"
	helperDirEnv = "VPCCNI_STORE_DIR"
	helperIDEnv  = "VPCCNI_STORE_ID"
)

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	dir := os.Getenv(helperDirEnv)
	var err error
	switch mode {
	case "churn":
		err = helperChurn(dir, os.Getenv(helperIDEnv))
	case "hang":
		err = helperHang(dir)
	case "loop":
		err = helperLoop(dir)
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperCmd(mode, dir, id string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+dir, helperIDEnv+"="+id)
	return cmd
}

const (
	churnProcs  = 50
	churnRounds = 20
	churnLog    = "churn.log"
)

// helperChurn takes and gives back an address churnRounds times. Each
// transaction also bumps a counter and appends to a shared log while it
// holds the write lock, so the log's order is the commit order.
func helperChurn(dir, id string) error {
	s, err := OpenNew(dir, Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, churnLog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer log.Close()
	for i := range churnRounds {
		key := fmt.Sprintf("p%s-%d/eth0", id, i)
		err := s.Update(func(tx *Tx) error {
			a, err := tx.Take(Assignment{Key: key}, time.Now(), pool.Config{})
			if err != nil {
				return err
			}
			if err := ownedOnce(tx, a); err != nil {
				return err
			}
			_, err = fmt.Fprintf(log, "take %s %s\n", a.IP, key)
			return errors.Join(err, tx.AddCounter("takes", 1))
		})
		if err != nil {
			return err
		}
		err = s.Update(func(tx *Tx) error {
			a, ok, err := tx.Give(key, time.Now())
			if err != nil || !ok {
				return fmt.Errorf("Give(%s) = %v, %v", key, ok, err)
			}
			_, err = fmt.Fprintf(log, "give %s %s\n", a.IP, key)
			return errors.Join(err, tx.AddCounter("gives", 1))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ownedOnce checks, inside the transaction, that no other assignment holds a.IP.
func ownedOnce(tx *Tx, a Assignment) error {
	all, err := tx.Assignments()
	for _, b := range all {
		if b.IP == a.IP && b.Key != a.Key {
			return fmt.Errorf("%s taken by %s while %s holds it", a.IP, a.Key, b.Key)
		}
	}
	return err
}

func TestConcurrentProcessesNeverLoseUpdatesOrShareAddresses(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error {
		return tx.PutENI(testENI(0, true, prefixBlock("100.64.0.0/28"), prefixBlock("100.64.0.16/28"),
			prefixBlock("100.64.0.32/28"), prefixBlock("100.64.0.48/28")))
	})
	if err := os.WriteFile(filepath.Join(dir, churnLog), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, churnProcs)
	for i := range churnProcs {
		wg.Go(func() {
			out, err := helperCmd("churn", dir, strconv.Itoa(i)).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("helper %d: %v: %s", i, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkChurnLog(t, filepath.Join(dir, churnLog))
	view(t, s, func(tx *Tx) error {
		c, err := tx.Counters()
		if c["takes"] != churnProcs*churnRounds || c["gives"] != churnProcs*churnRounds {
			t.Errorf("counters %v, want %d each", c, churnProcs*churnRounds)
		}
		all, err2 := tx.Assignments()
		if len(all) != 0 {
			t.Errorf("%d assignments left", len(all))
		}
		snap, err3 := tx.Snapshot()
		for _, b := range snap.ENIs[0].Blocks {
			for _, a := range b.Addrs {
				if a.State != pool.Free && a.State != pool.Cooling {
					t.Errorf("%s is %s at the end", a.IP, a.State)
				}
			}
		}
		return errors.Join(err, err2, err3, tx.Check())
	})
}

// checkChurnLog replays the commit-ordered log: an address is never taken
// while held, and only its holder gives it back.
func checkChurnLog(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	holder := map[string]string{}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	for n, line := range lines {
		var verb, ip, key string
		if _, err := fmt.Sscan(line, &verb, &ip, &key); err != nil {
			t.Fatalf("log line %d %q: %v", n, line, err)
		}
		switch h := holder[ip]; {
		case verb == "take" && h != "":
			t.Errorf("line %d: %s took %s held by %s", n, key, ip, h)
		case verb == "give" && h != key:
			t.Errorf("line %d: %s gave back %s held by %q", n, key, ip, h)
		}
		if verb == "take" {
			holder[ip] = key
		} else {
			delete(holder, ip)
		}
	}
	if len(lines) != 2*churnProcs*churnRounds {
		t.Errorf("%d log lines, want %d", len(lines), 2*churnProcs*churnRounds)
	}
}

// helperHang takes an address inside an Update and then waits to be killed.
func helperHang(dir string) error {
	s, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	return s.Update(func(tx *Tx) error {
		if _, err := tx.Take(Assignment{Key: "killed/eth0"}, time.Now(), pool.Config{}); err != nil {
			return err
		}
		if err := tx.AddCounter("killed", 1); err != nil {
			return err
		}
		fmt.Println("inside")
		time.Sleep(time.Minute)
		return errors.New("not killed")
	})
}

func TestKillInsideTransactionLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, seqBlocks("100.64.0.1", 3)...)) })
	before := fileSHA(t, s.Path())
	cmd := helperCmd("hang", dir, "")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "inside\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if after := fileSHA(t, s.Path()); after != before {
		t.Error("the killed transaction changed the file")
	}
	update(t, s, func(tx *Tx) error {
		if _, ok, _ := tx.Assignment("killed/eth0"); ok {
			t.Error("the killed transaction's assignment is there")
		}
		if c, _ := tx.Counters(); c["killed"] != 0 {
			t.Errorf("the killed transaction's counter is there: %v", c)
		}
		if a := mustTake(t, tx, "next/eth0", time.Now(), 0); a.IP.String() != "100.64.0.1" {
			t.Errorf("next Take got %s; the killed Take's address was not free", a.IP)
		}
		return tx.Check()
	})
}

// helperLoop takes and gives addresses until it is killed.
func helperLoop(dir string) error {
	s, err := OpenNew(dir, Options{})
	if err != nil {
		return err
	}
	fmt.Println("looping")
	for i := 0; ; i++ {
		key := fmt.Sprintf("loop-%d-%d/eth0", os.Getpid(), i)
		err := s.Update(func(tx *Tx) error {
			_, err := tx.Take(Assignment{Key: key}, time.Now(), pool.Config{})
			return errors.Join(err, tx.AddCounter("taken", 1), tx.AddEvent(Event{Kind: "take", Message: key}))
		})
		if err != nil {
			return err
		}
		if i%3 == 0 {
			continue // keep some, so assignments pile up
		}
		err = s.Update(func(tx *Tx) error {
			_, _, err := tx.Give(key, time.Now())
			return errors.Join(err, tx.AddCounter("given", 1))
		})
		if err != nil {
			return err
		}
	}
}

// TestKillAtRandomPointsKeepsTheFileConsistent kills a busy writer at random
// moments (often mid-commit) and checks the file after each kill.
func TestKillAtRandomPointsKeepsTheFileConsistent(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, seqBlocks("100.64.0.1", 250)...)) })
	for round := range 4 {
		cmd := helperCmd("loop", dir, "")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "looping\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper said %q, %v", line, err)
		}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		view(t, s, func(tx *Tx) error {
			c, err := tx.Counters()
			all, err2 := tx.Assignments()
			if int(c["taken"]-c["given"]) != len(all) {
				t.Errorf("round %d: taken %d - given %d != %d assignments", round, c["taken"], c["given"], len(all))
			}
			events, err3 := tx.Events(0)
			if int64(len(events)) != min(c["taken"], MaxEvents) {
				t.Errorf("round %d: %d events for %d takes", round, len(events), c["taken"])
			}
			return errors.Join(err, err2, err3, tx.Check())
		})
	}
}
