// Package awsenv builds the AWS SDK's configuration from the process's
// environment alone: the region (AWS_REGION, else AWS_DEFAULT_REGION) and
// the credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN. That is what AWS Lambda gives a function (its
// execution role's credentials, in those variables), and the first source
// the SDK's default chain (config.LoadDefaultConfig) reads; so a function
// built on it behaves as on the whole chain. The whole chain (shared files
// and profiles, SSO, web identity, STS role assumption, container and
// instance metadata credentials) is about 1.9 MB of every binary that
// links it, which no function uses: tools that talk to AWS with an
// operator's profile load it themselves (scripts/cmd/admin).
//
// It imports no SDK service and not the SDK's config package.
package awsenv

import (
	"cmp"
	"context"
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrNoCredentials is the error of a call made with Load's configuration
// when the environment held no credentials and no local endpoint was
// named: the call fails, as on the SDK's whole chain, not the building of
// its client (a worker's wiring is built before it is given any work).
var ErrNoCredentials = errors.New("awsenv: no AWS credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as AWS Lambda sets them); " +
	"a tool that uses a profile or SSO loads the SDK's whole chain (config.LoadDefaultConfig)")

// Load returns the SDK configuration of this process: region when not
// "", else the environment's; the environment's credentials, or, when
// local is set (an endpoint on this machine, which accepts any), the
// dummy credentials "local"/"local"; with neither, credentials whose
// retrieval fails with ErrNoCredentials, so each call says what is
// missing. Its error is always nil (the signature of the SDK's loaders).
func Load(region string, local bool) (aws.Config, error) {
	cfg := aws.Config{Region: cmp.Or(region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))}
	// The names the SDK's environment source reads, in its order.
	id := cmp.Or(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_ACCESS_KEY"))
	secret := cmp.Or(os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SECRET_KEY"))
	switch {
	case id != "" && secret != "":
		cfg.Credentials = aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
			AccountID: os.Getenv("AWS_ACCOUNT_ID"), Source: credentials.StaticCredentialsName,
		}})
	case local:
		cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
	default:
		cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, ErrNoCredentials
		})
	}
	return cfg, nil
}
