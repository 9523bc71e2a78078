package localrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

// Engine is the DynamoDB engine a local runtime runs on: the DynamoDB
// Local it started, or the one DYNAMODB_ENDPOINT names. A runtime notices
// an engine that dies (its process exits) at once; one that hangs (a JVM
// stopped, or parked on a disk that no longer answers, as a fault probe
// of issue #38 left one) answers nothing and would leave every request
// waiting out its deadline for ever. So the engine is probed: a
// consistent GetItem of an absent item of the runtime's table (it goes
// through the engine's storage, not only its HTTP threads) every
// HangAfter/6; when none has been answered for HangAfter
// (LOCAL_DYNAMODB_HANG_AFTER, 30 s by default), the runtime says so in one
// line and
//
//   - restarts its own engine on its data (LOCAL_DYNAMODB_DIR): the hung
//     JVM is continued and asked to stop (one stopped by a signal then
//     commits what it answered), killed if it has not within AbortWait,
//     its log kept beside the new one (.hung), and a new engine started
//     on the same address and folder, so every client (the API's, the functions', the admin
//     tool) reaches it again unchanged; at most three times in ten
//     minutes, then it stops as below;
//   - stops, exiting non-zero, when its engine kept the data in memory: a
//     new engine would hold none of it (not even the demo key), so a
//     supervisor's fresh start is the honest restart;
//   - keeps serving (every store call a 503 with Retry-After) when the
//     engine is not its own (DYNAMODB_ENDPOINT), and says so again in one
//     line when the engine answers again.
type Engine struct {
	// Endpoint is the engine's URL.
	Endpoint string

	opt       *ddblocal.Options // how the runtime's own engine starts; nil: DYNAMODB_ENDPOINT's
	dir       string
	table     string
	hangAfter time.Duration
	db        *store.DB // the probes' client
	log       *slog.Logger

	mu       sync.Mutex
	cur      *ddblocal.Engine // the runtime's own engine, as now running
	restarts []time.Time
	stopped  bool
}

func (e *Engine) logger() *slog.Logger {
	if e.log != nil {
		return e.log
	}
	return slog.Default()
}

// Stop ends the engine the runtime started (none: a no-op).
func (e *Engine) Stop() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	e.stopped = true
	cur := e.cur
	e.mu.Unlock()
	return cur.Stop()
}

// AbortWait is how long a hung engine has to stop when asked before it is
// killed.
const AbortWait = 5 * time.Second

// MaxRestarts in RestartWindow: an engine that hangs again and again after
// restarts has a problem a restart does not solve (a full disk).
const (
	MaxRestarts   = 3
	RestartWindow = 10 * time.Minute
)

// watch probes the engine until ctx ends; the channel gets the reason the
// runtime must stop: its engine died, or hung and cannot be restarted.
func (e *Engine) watch(ctx context.Context) <-chan error {
	fatal := make(chan error, 1)
	go func() {
		if err := e.run(ctx); err != nil {
			fatal <- err
		}
	}()
	return fatal
}

func (e *Engine) run(ctx context.Context) error {
	every := min(max(e.hangAfter/6, 200*time.Millisecond), 5*time.Second)
	lastAnswer, hung := time.Now(), false
	for {
		e.mu.Lock()
		cur := e.cur
		e.mu.Unlock()
		var died <-chan struct{}
		if cur != nil {
			died = cur.Done()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-died:
			e.mu.Lock()
			stopped := e.stopped
			e.mu.Unlock()
			if stopped {
				return nil
			}
			return fmt.Errorf("the local DynamoDB engine stopped unexpectedly; see %s", cur.LogPath)
		case <-time.After(every):
		}
		if e.hangAfter <= 0 || e.db == nil {
			continue
		}
		err := e.probe(ctx, min(every*3, e.hangAfter))
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			if hung {
				e.logger().Info("the DynamoDB engine answers again", "endpoint", e.Endpoint, "after", time.Since(lastAnswer).Round(time.Second).String())
			}
			lastAnswer, hung = time.Now(), false
			continue
		case hung || time.Since(lastAnswer) < e.hangAfter:
			continue
		}
		silent := time.Since(lastAnswer).Round(time.Second)
		if e.opt == nil { // not ours to restart
			hung = true
			e.logger().Error(fmt.Sprintf("the DynamoDB engine at %s has answered nothing for %s (DYNAMODB_ENDPOINT: not this runtime's to restart); "+
				"every request gets 503 with Retry-After until it answers", e.Endpoint, silent), "last_error", err.Error())
			continue
		}
		if e.dir == "" {
			e.logger().Error(fmt.Sprintf("the local DynamoDB engine has answered nothing for %s and holds its data in memory, which a new engine "+
				"would not have; stopping so that a supervisor starts the runtime afresh (LOCAL_DYNAMODB_DIR keeps data across restarts)", silent),
				"last_error", err.Error(), "engine_log", cur.LogPath)
			cur.Abort(AbortWait)
			return fmt.Errorf("the local DynamoDB engine hung (no answer for %s); its data was in memory", silent)
		}
		if !e.mayRestart() {
			e.logger().Error(fmt.Sprintf("the local DynamoDB engine has answered nothing for %s, after %d restarts in %s; stopping", silent, MaxRestarts, RestartWindow),
				"last_error", err.Error(), "engine_log", cur.LogPath)
			cur.Abort(AbortWait)
			return fmt.Errorf("the local DynamoDB engine hung again after %d restarts in %s; see %s", MaxRestarts, RestartWindow, cur.LogPath)
		}
		e.logger().Error(fmt.Sprintf("the local DynamoDB engine has answered nothing for %s; restarting it on its data in %s", silent, e.dir),
			"last_error", err.Error(), "engine_log", cur.LogPath+".hung")
		if err := e.restart(ctx, cur); err != nil {
			return err
		}
		lastAnswer = time.Now()
	}
}

// probe reads an absent item of the table, consistently: any answer of the
// engine's, an error included (no such table), is an answer.
func (e *Engine) probe(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := e.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: "CONFIG"}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: "ENGINE-PROBE"},
		}}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	var answered *awshttp.ResponseError // with a status: a timeout is one too, with none
	if err == nil || errors.As(err, &answered) && answered.HTTPStatusCode() > 0 {
		return nil
	}
	return err
}

func (e *Engine) mayRestart() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	kept := e.restarts[:0]
	for _, t := range e.restarts {
		if now.Sub(t) < RestartWindow {
			kept = append(kept, t)
		}
	}
	e.restarts = kept
	return len(e.restarts) < MaxRestarts
}

// restart kills the hung engine and starts another on the same address
// and data, keeping the hung one's log beside the new one's.
func (e *Engine) restart(ctx context.Context, hung *ddblocal.Engine) error {
	hung.Abort(AbortWait)
	_ = os.Rename(hung.LogPath, hung.LogPath+".hung")
	var next *ddblocal.Engine
	var err error
	for try := 0; try < 10; try++ { // the port is free once the killed JVM's socket is gone
		if next, err = ddblocal.Start(ctx, *e.opt); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("restart the local DynamoDB engine after it hung: %w", err)
	}
	e.mu.Lock()
	e.cur = next
	e.restarts = append(e.restarts, time.Now())
	stopped := e.stopped
	e.mu.Unlock()
	if stopped { // the runtime stopped meanwhile
		return next.Stop()
	}
	e.logger().Info("dynamodb local started", "endpoint", next.Endpoint, "pid", next.Pid(), "log", next.LogPath, "data_dir", e.dir, "restarted", true)
	return nil
}
