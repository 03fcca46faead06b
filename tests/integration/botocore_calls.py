#!/usr/bin/env python3
"""The EC2 calls that tests/integration/itest_aws_calls.c makes through skypool's AWS provider,
made here by botocore against the same fault proxy, so that aws.sh can compare the parameters
each client sent. Endpoint: argv[1]."""
import sys

import boto3

ec2 = boto3.client("ec2", endpoint_url=sys.argv[1], region_name="us-east-1")
ec2.describe_instance_type_offerings(
    LocationType="availability-zone-id",
    Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]},
             {"Name": "location", "Values": ["use1-az4"]}])
ec2.describe_instances(
    Filters=[{"Name": "instance-state-name",
              "Values": ["pending", "running", "stopping", "stopped", "shutting-down"]},
             {"Name": "tag:skypool:pool", "Values": ["cmp"]}],
    MaxResults=100)
ec2.describe_regions()
ec2.describe_images(
    Owners=["amazon"],
    Filters=[{"Name": "name",
              "Values": ["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)*"]},
             {"Name": "architecture", "Values": ["x86_64"]},
             {"Name": "state", "Values": ["available"]}])
try:
    ec2.describe_key_pairs(KeyNames=["cmp-key"])
except ec2.exceptions.ClientError:
    pass  # not there yet: the request is what counts
