package awsenv

import (
	"errors"
	"testing"
)

// TestLoad reads what Lambda sets (and the SDK's alternative names), the
// region's precedence, local endpoints' dummy credentials, and an
// environment without credentials, whose calls fail (not its loading). t.Setenv: not parallel.
func TestLoad(t *testing.T) {
	for _, c := range []struct {
		name                     string
		env                      map[string]string
		region                   string
		local                    bool
		wantRegion, wantID, want string // want: the secret; "" for an error
	}{
		{"Lambda's variables", map[string]string{"AWS_REGION": "eu-north-1", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s1", "AWS_SESSION_TOKEN": "tok"}, "", false, "eu-north-1", "AKIA1", "s1"},
		{"the older names", map[string]string{"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY": "AKIA2", "AWS_SECRET_KEY": "s2"}, "", false, "eu-west-1", "AKIA2", "s2"},
		{"an explicit region wins", map[string]string{"AWS_REGION": "eu-north-1", "AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s1"}, "us-east-1", false, "us-east-1", "AKIA1", "s1"},
		{"a local endpoint without credentials", nil, "us-east-1", true, "us-east-1", "local", "local"},
		{"a local endpoint keeps the environment's", map[string]string{"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s1"}, "", true, "", "AKIA1", "s1"},
		{"no credentials", map[string]string{"AWS_REGION": "eu-north-1"}, "", false, "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN", "AWS_ACCOUNT_ID"} {
				t.Setenv(k, c.env[k])
			}
			cfg, err := Load(c.region, c.local)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := cfg.Credentials.Retrieve(t.Context())
			if c.want == "" {
				if !errors.Is(err, ErrNoCredentials) {
					t.Fatalf("err %v, want ErrNoCredentials", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != c.wantRegion || creds.AccessKeyID != c.wantID || creds.SecretAccessKey != c.want || creds.SessionToken != c.env["AWS_SESSION_TOKEN"] {
				t.Fatalf("region %q, credentials %+v", cfg.Region, creds)
			}
		})
	}
}
