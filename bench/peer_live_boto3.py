#!/usr/bin/env python3
"""The peer for bench/aws_live.sh: skypool's live AWS offer refresh written with boto3.

The same calls against the same server, one thread per region as skypool does: zones,
accelerated instance types, their offerings by zone ID, and the latest spot prices; then the
offers for 8x H100, cheapest spot first. Usage: peer_live_boto3.py ENDPOINT REGION...
"""
import sys
from concurrent.futures import ThreadPoolExecutor

import boto3

PATTERNS = ["p*", "g*", "trn*", "inf*", "dl*"]


def region_offers(endpoint, region):
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region)
    zones = {z["ZoneName"]: z["ZoneId"]
             for z in ec2.describe_availability_zones()["AvailabilityZones"]}
    types = {}
    for page in ec2.get_paginator("describe_instance_types").paginate(
            Filters=[{"Name": "instance-type", "Values": PATTERNS}], MaxResults=100):
        for t in page["InstanceTypes"]:
            gpus = t.get("GpuInfo", {}).get("Gpus") or t.get("NeuronInfo", {}).get("NeuronDevices")
            if gpus:
                types[t["InstanceType"]] = (gpus[0]["Name"], gpus[0]["Count"])
    names = sorted(types)
    offers = []
    for i in range(0, len(names), 100):
        chunk = names[i:i + 100]
        for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone-id",
                Filters=[{"Name": "instance-type", "Values": chunk}], MaxResults=1000):
            offers += [(o["InstanceType"], o["Location"]) for o in page["InstanceTypeOfferings"]]
    spot = {}
    for i in range(0, len(names), 100):
        for page in ec2.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=names[i:i + 100], ProductDescriptions=["Linux/UNIX"],
                MaxResults=1000):
            for p in page["SpotPriceHistory"]:
                key = (p["InstanceType"], zones.get(p["AvailabilityZone"]))
                if key not in spot or p["Timestamp"] > spot[key][0]:
                    spot[key] = (p["Timestamp"], float(p["SpotPrice"]))
    return [(region, t, z, types[t], spot.get((t, z), (None, None))[1]) for t, z in offers]


def main():
    endpoint, regions = sys.argv[1], sys.argv[2:]
    with ThreadPoolExecutor(len(regions)) as pool:
        rows = [r for rs in pool.map(lambda r: region_offers(endpoint, r), regions) for r in rs]
    h100 = sorted((r for r in rows if r[3] == ("H100", 8) and r[4] is not None),
                  key=lambda r: r[4])
    print(len(rows), "offers;", h100[0] if h100 else "no H100:8")


if __name__ == "__main__":
    main()
