package party

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/netguard"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// Limits on what the register may send.
const (
	maxSnapshotBytes = 64 << 10
	maxLogoBytes     = MaxLogoBytes
)

// DefaultEnrichSchedule is the pause before each retry of a failed
// enrichment; after the last, the company's enrichment is failed.
var DefaultEnrichSchedule = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}

// Enricher fetches a company's register snapshot and logo after its
// creation. It consumes company.enrich jobs from its queue; a failure
// re-enqueues the job with the next pause of Schedule.
type Enricher struct {
	Store *Store
	// Register is COMPANY_REGISTER_URL; empty means no register: enrichment
	// is recorded as skipped.
	Register string
	// RegisterKey, when set, gives the register's API key, sent as the
	// `key` query parameter of every lookup (a cached SecretKey: the key
	// is never in a setting, the URL or a log line).
	RegisterKey func(context.Context) (string, error)
	HTTP        *http.Client
	Queue       queue.Queue
	Schedule    []time.Duration
	// Clock is the enricher's time: retry waits and recorded times (the
	// wall clock when nil).
	Clock clock.Clock
	// Log gets failures and retries (default slog.Default()).
	Log *slog.Logger
}

func (e *Enricher) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// Logo is stored apart from the company, so that reads stay small.
type logoItem struct {
	store.Keys
	ContentType string `dynamodbav:"content_type"`
	Bytes       []byte `dynamodbav:"bytes"`
}

// errPermanent marks failures that retrying cannot fix.
type errPermanent struct{ msg string }

func (e errPermanent) Error() string { return e.msg }

// Handle runs one job. It returns an error only when the job could not be
// recorded (the store failed): the queue then delivers it again.
func (e *Enricher) Handle(ctx context.Context, m queue.Message) error {
	var msg outbox.Message
	// company.created: a job queued by a release before the job had a
	// type of its own.
	if err := json.Unmarshal(m.Body, &msg); err != nil || (msg.Type != outbox.CompanyEnrich && msg.Type != outbox.CompanyCreated) {
		return nil // not ours: drop rather than loop on it
	}
	var data struct {
		Company struct{ ID, CVR string } `json:"company"`
	}
	if err := json.Unmarshal(msg.Data, &data); err != nil {
		return nil
	}
	c, err := e.Store.GetCompany(ctx, msg.OrgID, data.Company.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Enrichment != nil && c.Enrichment.Status != EnrichmentPending {
		return nil // a duplicate delivery of a finished job
	}
	now := e.now()
	if e.Register == "" {
		return e.record(ctx, msg.OrgID, c.ID, &Enrichment{Status: EnrichmentSkipped, UpdatedAt: store.FormatTime(now),
			Error: "no company register is configured (COMPANY_REGISTER_URL)"}, nil)
	}
	snapshot, logo, err := e.fetch(ctx, c.CVR)
	// Recording the outcome must finish even when the register used up the
	// invocation's time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	attempts := msg.Attempt + 1
	var perm errPermanent
	switch {
	case err == nil:
		en := &Enrichment{Status: EnrichmentDone, Attempts: attempts, Register: snapshot, UpdatedAt: store.FormatTime(now)}

		if logo != nil {
			sum := sha256.Sum256(logo.Bytes)
			en.Logo = &Logo{ContentType: logo.ContentType, Size: len(logo.Bytes), SHA256: hex.EncodeToString(sum[:])}
			logo.Keys = store.Keys{PK: store.OrgPK(msg.OrgID), SK: "COMPANYLOGO#" + c.ID, Kind: "company_logo"}
		}
		return e.record(ctx, msg.OrgID, c.ID, en, logo)
	case errors.As(err, &perm) || attempts > len(e.schedule()):
		e.log().WarnContext(ctx, "company enrichment failed", "company_id", c.ID, "attempts", attempts, "err", err)
		return e.record(ctx, msg.OrgID, c.ID, &Enrichment{Status: EnrichmentFailed, Attempts: attempts, Error: publicError(err), UpdatedAt: store.FormatTime(now)}, nil)
	default:
		e.log().InfoContext(ctx, "company enrichment will retry", "company_id", c.ID, "attempts", attempts, "err", err)
		msg.Attempt = attempts
		body, _ := json.Marshal(msg)
		if err := e.Queue.Send(ctx, msg.OrgID, body, e.schedule()[attempts-1]); err != nil {
			return err
		}
		return e.record(ctx, msg.OrgID, c.ID, &Enrichment{Status: EnrichmentPending, Attempts: attempts, Error: publicError(err), UpdatedAt: store.FormatTime(now)}, nil)
	}
}

// registerError is a failure told in the integrator's terms; the detail
// (the register's URL, host, credentials) goes only to the log.
type registerError struct {
	public string
	detail error
}

func (e *registerError) Error() string { return e.public + ": " + e.detail.Error() }
func (e *registerError) Unwrap() error { return e.detail }

// The integrator-facing outcomes of a failed lookup (whether it is retried
// shows in enrichment.status).
const (
	registerUnavailable = "the company register was unavailable"
	registerRefused     = "the company register refused the lookup"
	registerBadAnswer   = "the company register sent an answer that could not be used"
)

// publicError is what enrichment.error shows API clients: never the
// configured URL or its credentials.
func publicError(err error) string {
	var re *registerError
	if errors.As(err, &re) {
		return httpapi.Clip(re.public, MaxEnrichmentError)
	}
	var perm errPermanent
	if errors.As(err, &perm) {
		return httpapi.Clip(perm.msg, MaxEnrichmentError)
	}
	return registerUnavailable
}

// MaxEnrichmentError bounds enrichment.error; MaxLogoBytes the stored logo.
const (
	MaxEnrichmentError = 300
	MaxLogoBytes       = 256 << 10
)

func (e *Enricher) now() time.Time {
	return clock.Or(e.Clock).Now()
}

func (e *Enricher) schedule() []time.Duration {
	if e.Schedule != nil {
		return e.Schedule
	}
	return DefaultEnrichSchedule
}

// record stores the outcome on the company (which moves its updated_at, so
// updated_since syncs see it) with its company.updated event, and the logo
// beside it.
func (e *Enricher) record(ctx context.Context, org, id string, en *Enrichment, logo *logoItem) error {
	if logo != nil {
		item, err := store.Marshal(logo)
		if err != nil {
			return err
		}
		if err := e.Store.db.Put(ctx, item); err != nil {
			return err
		}
	}
	return store.Optimistic("company "+id, func() error {
		c, err := e.Store.GetCompany(ctx, org, id)
		if err != nil {
			return err
		}
		prev := c.UpdatedAt
		c.Enrichment = en
		now := e.now()
		c.UpdatedAt = store.NextUpdate(prev, now)
		c.SetKeys(org)
		// The outcome and its company.updated commit together.
		tx := e.Store.db.Tx()
		tx.PutWhen(c, store.UnchangedSince(prev))
		if err := outbox.Raise(tx, org, outbox.CompanyUpdated, "company", CompanyEvent(&c), now); err != nil {
			return err
		}
		var failed *store.TxFailed
		if err := tx.Commit(ctx); errors.As(err, &failed) {
			return store.ErrConflict // changed meanwhile: read again
		} else if err != nil {
			return err
		}
		return nil
	})
}

func (e *Enricher) client() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return guardedRegisterClient
}

var guardedRegisterClient = RegisterClient(false)

// RegisterClient is the HTTP client of register lookups: 10 s in all, 5 s
// to connect, no proxy, and no redirects followed. A redirect is answered
// as a failed lookup: following one would send the register's credentials
// (its URL, with an apikey, in Referer) to a host nobody configured, and
// store that host's answer as the company's snapshot. Unless allowPrivate
// (local development), the connection may only reach public addresses
// (netguard), as webhook deliveries.
func RegisterClient(allowPrivate bool) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, DialContext: netguard.Dialer(5*time.Second, allowPrivate).DialContext,
			TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 60 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// lookupURL joins the register's base URL and a path, keeping the base's
// own path and query: https://reg.example/v2?apikey=k with
// /companies/12345678 is https://reg.example/v2/companies/12345678?apikey=k.
func lookupURL(register, path string) (string, error) {
	u, err := url.Parse(register)
	if err != nil || u.Host == "" {
		return "", errors.New("COMPANY_REGISTER_URL is not an absolute URL")
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	return u.String(), nil
}

// fetch reads the snapshot (required) and the logo (optional). The
// snapshot is scrubbed of CPR numbers before anything keeps it.
func (e *Enricher) fetch(ctx context.Context, cvr string) (json.RawMessage, *logoItem, error) {
	path := "/companies/" + url.PathEscape(cvr)
	body, _, status, err := e.get(ctx, path, maxSnapshotBytes)
	switch {
	case err != nil:
		return nil, nil, err
	case status == http.StatusNotFound:
		return nil, nil, errPermanent{fmt.Sprintf("the company register has no company with CVR %s", cvr)}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, nil, &registerError{fmt.Sprintf("%s (HTTP %d)", registerRefused, status), fmt.Errorf("snapshot: status %d", status)}
	case status != http.StatusOK:
		return nil, nil, &registerError{fmt.Sprintf("%s (HTTP %d)", registerUnavailable, status), fmt.Errorf("snapshot: status %d", status)}
	}
	// Numbers as written (UseNumber): a CPR sent as a number, 1501901234
	// or 1.501901234e9, is scrubbed as a string would be.
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, nil, &registerError{registerBadAnswer, errors.New("snapshot is not a JSON object")}
	}
	clean, removed := cpr.Scrub(obj)
	if removed > 0 {
		e.log().WarnContext(ctx, "company register snapshot held CPR numbers; removed before storing", "cvr", cvr, "removed", removed)
		if body, err = json.Marshal(clean); err != nil {
			return nil, nil, err
		}
	}
	lb, ctype, status, err := e.get(ctx, path+"/logo", maxLogoBytes)
	switch {
	case err != nil:
		return nil, nil, err
	case status == http.StatusNotFound:
		return body, nil, nil
	case status != http.StatusOK:
		return nil, nil, &registerError{fmt.Sprintf("%s (HTTP %d for the logo)", registerUnavailable, status), fmt.Errorf("logo: status %d", status)}
	}
	if mt, _, _ := mime.ParseMediaType(ctype); !strings.HasPrefix(mt, "image/") {
		return body, nil, nil // not an image: keep the snapshot, skip the logo
	}
	return body, &logoItem{ContentType: ctype, Bytes: lb}, nil
}

func (e *Enricher) get(ctx context.Context, path string, limit int64) ([]byte, string, int, error) {
	u, err := lookupURL(e.Register, path)
	if err != nil {
		return nil, "", 0, errPermanent{"the company register is misconfigured; the operator has been told"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", 0, errPermanent{"the company register is misconfigured; the operator has been told"}
	}
	if e.RegisterKey != nil {
		key, err := e.RegisterKey(ctx)
		if err != nil {
			return nil, "", 0, &registerError{registerUnavailable + " (its key could not be read)", err}
		}
		q := req.URL.Query()
		q.Set("key", key)
		req.URL.RawQuery = q.Encode()
	}
	req.Header.Set("Accept", "application/json, image/*")
	resp, err := e.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = u // as configured: without the key
		}
		return nil, "", 0, &registerError{registerUnavailable + " (no answer)", err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", 0, &registerError{registerUnavailable, fmt.Errorf("read: %w", err)}
	}
	if int64(len(b)) > limit && resp.StatusCode == http.StatusOK {
		return nil, "", 0, errPermanent{fmt.Sprintf("the company register's answer was over %d bytes", limit)}
	}
	return b, resp.Header.Get("Content-Type"), resp.StatusCode, nil
}

// pendingCompany is the filter of companies whose enrichment is pending
// (enrichment.status: a field of the enrichment map).
func pendingCompany() expression.ConditionBuilder {
	return expression.Name("kind").Equal(expression.Value("company")).
		And(expression.Name("enrichment").AppendName(expression.Name("status")).Equal(expression.Value(string(EnrichmentPending))))
}

// pendingEverywhere is the Scan filter of PendingCompanies for every
// organisation: constant, built once.
var pendingEverywhere = store.MustBuild(expression.NewBuilder().WithFilter(pendingCompany()))

// PendingCompanies calls visit with every company whose enrichment is
// pending: of org (a Query of its companies), or of every organisation
// when org is "" (a Scan of the table: for the devserver's start and an
// operator's repair, never a request). A company is pending while its job
// is queued or waiting for a retry, or when its trigger was lost (a
// process killed between the create and the job on the devserver, or a
// stream batch given up on AWS): starting it again is harmless.
func PendingCompanies(ctx context.Context, db *store.DB, org string, visit func(org string, c Company) error) error {
	var inOrg expression.Expression
	if org != "" {
		var err error
		inOrg, err = expression.NewBuilder().WithFilter(pendingCompany()).
			WithKeyCondition(expression.Key("GSI1PK").Equal(expression.Value(store.Collection(org, "COMPANY")))).Build()
		if err != nil {
			return err
		}
	}
	var start map[string]ddbtypes.AttributeValue
	for {
		var items []map[string]ddbtypes.AttributeValue
		var next map[string]ddbtypes.AttributeValue
		if org != "" {
			out, err := db.Client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(db.Table), IndexName: aws.String(string(store.GSI1)),
				KeyConditionExpression: inOrg.KeyCondition(), FilterExpression: inOrg.Filter(),
				ExpressionAttributeNames: inOrg.Names(), ExpressionAttributeValues: inOrg.Values(), ExclusiveStartKey: start})
			if err != nil {
				return err
			}
			items, next = out.Items, out.LastEvaluatedKey
		} else {
			out, err := db.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(db.Table), FilterExpression: pendingEverywhere.Filter(),
				ExpressionAttributeNames: pendingEverywhere.Names(), ExpressionAttributeValues: pendingEverywhere.Values(), ExclusiveStartKey: start})
			if err != nil {
				return err
			}
			items, next = out.Items, out.LastEvaluatedKey
		}
		for _, it := range items {
			var c Company
			if err := store.Unmarshal(it, &c); err != nil {
				return err
			}
			if err := visit(strings.TrimPrefix(c.PK, "O#"), c); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		start = next
	}
}
