package auth

import (
	"reflect"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
)

// TestDecodeClientReadsWhatUnmarshalReads: the hand-written decoder of
// the client item every request reads agrees with the reflective one.
func TestDecodeClientReadsWhatUnmarshalReads(t *testing.T) {
	t.Parallel()
	for _, c := range []Client{
		{ID: "c1", OrgID: "o1", Mode: ModeTest, Scopes: []string{"matters:read", "time:write"}, CreatedAt: "2026-01-01T00:00:00.000000Z",
			Secrets: map[string]Secret{"s1": {Hash: "abc", CreatedAt: "2026-01-01T00:00:00.000000Z"}, "s2": {Hash: "def"}}},
		{ID: "c2", OrgID: "o2", Name: "import", Mode: ModeLive, Scopes: []string{}, ExpiresAt: 1900000000, RevokedAt: "2026-02-01T00:00:00.000000Z",
			RateLimit: 600, Secrets: map[string]Secret{}},
	} {
		item, err := store.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var want Client
		if err := store.Unmarshal(item, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeClient(item)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Scopes) == 0 {
			want.Scopes, got.Scopes = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decoded %+v\nwant    %+v", got, want)
		}
	}
	if _, err := decodeClient(map[string]ddbtypes.AttributeValue{}); err == nil {
		t.Error("an empty item decoded")
	}
}
