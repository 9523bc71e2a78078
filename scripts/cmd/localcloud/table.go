package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/store"
)

// createTable makes the template's table (keys, indexes, stream, TTL), or
// checks the one that is there has its stream; it returns the stream ARN.
func createTable(ctx context.Context, db *store.DB, t stack.Table) (string, error) {
	var def dynamodb.CreateTableInput
	raw, _ := json.Marshal(t.Props)
	if err := json.Unmarshal(raw, &def); err != nil {
		return "", fmt.Errorf("table %s: %w", t.ID, err)
	}
	def.TableName = aws.String(db.Table)
	def.BillingMode = ddbtypes.BillingModePayPerRequest
	def.SSESpecification, def.Tags, def.DeletionProtectionEnabled, def.ResourcePolicy = nil, nil, nil, nil
	stream := def.StreamSpecification
	if stream != nil {
		stream.StreamEnabled = aws.Bool(true)
	}
	_, err := db.Client.CreateTable(ctx, &def)
	var inUse *ddbtypes.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
		if err != nil {
			return "", err
		}
		if stream != nil && out.Table.LatestStreamArn == nil {
			if _, err := db.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: def.TableName, StreamSpecification: stream}); err != nil {
				return "", fmt.Errorf("turn on the table's stream: %w", err)
			}
		}
	case err != nil:
		return "", fmt.Errorf("create the table %s: %w", db.Table, err)
	}
	if ttl, ok := t.Props["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
		_, _ = db.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: def.TableName,
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(fmt.Sprint(ttl["AttributeName"])), Enabled: aws.Bool(true)}})
	}
	out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}
