package auth_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestRefusedKeysCostTheirClientNothing: authentication reads the client
// and counts the request at once (the roles may write nothing of a
// client but its counts, so the key cannot be a condition of the count);
// a request whose secret is wrong, whose mode is wrong, or whose client is
// revoked, expired or unknown is refused and its count taken back. Four
// organisations' keys at once, each sent good and refused requests in
// parallel: each client's count for the minute is its good requests
// exactly, and an unknown client gets no item.
func TestRefusedKeysCostTheirClientNothing(t *testing.T) {
	db := storetest.NewDB(t)
	s := auth.NewStore(db, 0)
	ctx := context.Background()
	now := time.Now()
	type tenant struct {
		good, wrongSecret, wrongMode auth.Token
		revoked, expired             auth.Token
		client                       string
	}
	var tenants []tenant
	for i := range 4 {
		org := "org-" + strconv.Itoa(i)
		if _, err := s.CreateOrg(ctx, org, org, now); err != nil {
			t.Fatal(err)
		}
		mk := func(exp time.Time) (auth.Client, auth.Token) {
			c, tok, err := s.CreateKey(ctx, auth.KeyRequest{OrgID: org, Mode: auth.ModeTest, Scopes: auth.Catalogue, Expires: exp}, now)
			if err != nil {
				t.Fatal(err)
			}
			return c, tok
		}
		c, good := mk(time.Time{})
		wrong, err := auth.ParseToken(good.String()[:len(good.String())-64] + strings.Repeat("0", 64))
		if err != nil {
			t.Fatal(err)
		}
		mode, err := auth.ParseToken(strings.Replace(good.String(), "_test_", "_live_", 1))
		if err != nil {
			t.Fatal(err)
		}
		rc, revoked := mk(time.Time{})
		if err := s.Revoke(ctx, rc.ID, now); err != nil {
			t.Fatal(err)
		}
		_, expired := mk(now.Add(time.Second))
		tenants = append(tenants, tenant{good: good, wrongSecret: wrong, wrongMode: mode, revoked: revoked, expired: expired, client: c.ID})
	}
	unknown, err := auth.ParseToken("pa_test_" + strings.Repeat("ab", 16) + "_" + strings.Repeat("cd", 8) + "_" + strings.Repeat("ef", 32))
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Second) // the expired key's expiry has passed
	const goodEach = 5
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for _, tn := range tenants {
		for range goodEach {
			wg.Go(func() {
				if _, _, err := s.Authenticate(ctx, tn.good, later); err != nil {
					errs <- err
				}
			})
		}
		for _, bad := range []auth.Token{tn.wrongSecret, tn.wrongMode, tn.revoked, tn.expired, unknown} {
			for range 3 {
				wg.Go(func() {
					if _, _, err := s.Authenticate(ctx, bad, later); !errors.Is(err, auth.ErrUnauthenticated) {
						errs <- errors.New("a refused key: " + errorText(err))
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	minute := "rl_" + strconv.FormatInt(later.Unix()/60, 10)
	count := func(client string) (string, bool) {
		out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), ConsistentRead: aws.Bool(true),
			Key: store.Key("APICLIENT#"+client, "APICLIENT")})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil {
			return "", false
		}
		n, _ := out.Item[minute].(*ddbtypes.AttributeValueMemberN)
		if n == nil {
			return "0", true
		}
		return n.Value, true
	}
	for _, tn := range tenants {
		if n, _ := count(tn.client); n != strconv.Itoa(goodEach) {
			t.Errorf("client %s counted %s requests this minute, want its %d good ones", tn.client, n, goodEach)
		}
		for _, other := range []auth.Token{tn.revoked, tn.expired} {
			if n, _ := count(other.ClientID); n != "0" {
				t.Errorf("a refused client %s counted %s", other.ClientID, n)
			}
		}
	}
	if _, ok := count(unknown.ClientID); ok {
		t.Error("an unknown client's request made an item")
	}
}

func errorText(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}
