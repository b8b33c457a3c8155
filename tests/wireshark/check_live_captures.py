#!/usr/bin/env python3
# Copyright (c) 2026 MetaRoCE-ns3 authors
# SPDX-License-Identifier: GPL-2.0-only
"""Wireshark checks of captures from real runs (CTest label `wireshark`).

check_captures.py compares tshark with a frame-by-frame sidecar from the engine's fake-clock
testbed. This script checks captures nobody scripted frame by frame, so it asserts what must
hold for ANY frame of a correct run:

  --source=sim   run contrib/metaroce/examples/metaroce-pcap-capture (an ns-3 simulation: one
                 flow over a lossy link, ICRC on, pcap of host 0's port) for --transport
  --source=hil   run build/bin/metaroce-perf server + client on 127.0.0.1 in UDP mode (no
                 privileges) with --pcap on both sides and --loss on the client

and then, for MetaRoCE (tshark + tools/wireshark/metaroce.lua): every frame decodes as
MetaRoCE, no malformed packets or expert errors, opcodes in the MetaRoCE set, path ids below
the configured path count, the UDP source port of a data frame is its connection's base + path
id, ICRC good (Lua) and equal to a zlib recomputation, retransmissions flagged when frames were
lost, ACKs and data present; every coalesced ACK shows as many ACK records as its RecordCount
says, each with its PSNs, AckDelay and a SACK bitmap exactly when its flags say so, and its
datagram is 12 + 8 + 16 per record (+ 32 per bitmap) + 4 bytes long. For RoCEv2 (tshark WITHOUT the Lua): every frame decodes with
Wireshark's own InfiniBand dissector, RC opcodes with names, no malformed packets or expert
info, ICRC valid (zlib), go-back-N retransmissions visible when frames were lost; then the same
capture with the Lua loaded: still Wireshark's dissector, Lua RoCEv2 ICRC check Good.

Standard library only. Exits 77 (CTest SKIP_RETURN_CODE) without tshark or the program.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_captures import (  # noqa: E402  (same directory)
    ACK_DELAY_UNIT_NS, ETH, FLAG_SACK, HDRS, IB_OPCODE_NAMES, IP4, MR_ACK, MR_ACK_COALESCED,
    MR_DATA, MR_NAK, MR_OPCODES, ROCE_CNP, SKIP, UDP, Checker, Failure, Tshark,
    cack_datagram_length, cack_records, check_clean, icrc_of_frame, num, nums, read_pcap, shows)

ROCE_PORT = 4791


# ----------------------------------------------------------------------------------------------
# Producing the captures
# ----------------------------------------------------------------------------------------------

def run_sim(args, outdir):
    """Run the ns-3 example; return (pcap paths, info dict)."""
    cmd = [args.program, "--out=" + outdir, "--transport=" + args.transport,
           "--topology=" + args.topology, "--paths=%d" % args.paths, "--seed=%d" % args.seed]
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    sys.stdout.write(p.stdout.decode(errors="replace"))
    if p.returncode != 0:
        raise Failure(f"{args.program} failed ({p.returncode})")
    with open(os.path.join(outdir, args.transport + ".json")) as f:
        info = json.load(f)
    if not info["done"]:
        raise Failure("the simulated flow did not complete")
    if not info["lost_sent"]:
        raise Failure("no frame host 0 sent was lost: the scenario shows no retransmission "
                      "(choose another --seed)")
    info["ports"] = [ROCE_PORT]
    return [os.path.join(outdir, info["pcap"])], info


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_hil(args, outdir):
    """Run a short loopback metaroce-perf pair with --pcap on both; return (pcaps, info)."""
    control = str(free_tcp_port())
    # Source ports are bound sockets: keep runs with different data ports apart (and away
    # from tests/hil's loopback run, which uses 40000 and 30000).
    shift = (args.data_port - 4900) * 256
    server_pcap = os.path.join(outdir, f"hil-{args.transport}-server.pcap")
    client_pcap = os.path.join(outdir, f"hil-{args.transport}-client.pcap")
    for f in (server_pcap, client_pcap):
        if os.path.exists(f):
            os.remove(f)
    common = ["--port", control, "--mtu", "1024", "--transport", args.transport,
              "--paths", str(args.paths), "--timeout", "5", "--seed", "7"]
    server = [args.program] + common + ["--data-port", str(args.data_port), "--sport-base",
                                        str(40000 + shift), "--pcap", server_pcap]
    client = [args.program, "127.0.0.1"] + common + [
        "--data-port", str(args.data_port + 1), "--sport-base", str(30000 + shift), "--size", "16K",
        "--iters", "20", "--loss", str(args.loss), "--pcap", client_pcap]
    print("$ " + " ".join(server) + " &")
    srv = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.3)
        print("$ " + " ".join(client))
        try:
            cl = subprocess.run(client, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                timeout=60)
        except subprocess.TimeoutExpired:
            raise Failure("metaroce-perf client did not finish in 60 s")
        sys.stdout.write(cl.stdout.decode(errors="replace"))
        try:
            sout, _ = srv.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            raise Failure("metaroce-perf server did not exit 15 s after the client")
        sys.stdout.write(sout.decode(errors="replace"))
        if cl.returncode != 0 or srv.returncode != 0:
            raise Failure(f"metaroce-perf client exit {cl.returncode}, server exit "
                          f"{srv.returncode}")
    finally:
        if srv.poll() is None:
            srv.send_signal(signal.SIGKILL)  # only the server this script started
            srv.wait()
    info = {"transport": args.transport, "paths": args.paths, "loss": args.loss,
            # The pcap carries the canonical headers the engine built and its ICRC covers
            # (UDP destination port 4791), not the loopback sockets' ports.
            "ports": [ROCE_PORT],
            # The HIL capture sits under the fault wrapper: a dropped frame is not in it, so a
            # retransmission is not a repeat there. No retransmission assertion.
            "lost_sent": None}
    return [client_pcap, server_pcap], info


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------

def decode_as(info):
    """tshark -d options: HIL captures use non-standard data ports."""
    out = []
    for port in info.get("ports", []):
        if port != ROCE_PORT:
            out += ["-d", f"udp.port=={port},infiniband"]
    return out


def decode_as_lua(info):
    out = []
    for port in info.get("ports", []):
        if port != ROCE_PORT:
            out += ["-d", f"udp.port=={port},metaroce"]
    return out


def pdml(ts, pcap, lua, extra):
    import xml.etree.ElementTree as ET
    out = ts.run(extra + ["-r", pcap, "-T", "pdml"], lua)
    packets = []
    for pkt in ET.fromstring(out).iter("packet"):
        fields = {}
        for el in pkt.iter():
            name = el.get("name")
            if name:
                fields.setdefault(name, []).append(el)
        packets.append(fields)
    return packets


def expert_errors(ts, pcap, lua, extra):
    out = ts.run(extra + ["-r", pcap, "-q", "-z", "expert,error"], lua).decode(errors="replace")
    return out if "Errors" in out else ""


def check_zlib_icrc(c, w, fr):
    computed, stored = icrc_of_frame(fr)
    c.eq(f"{w} ICRC recomputed with zlib", computed, stored)


def check_metaroce(args, ts, pcaps, info):
    c = Checker(f"{args.source}-metaroce")
    extra = decode_as_lua(info)
    paths = info["paths"]
    total = 0
    stats = {"data": 0, "ack": 0, "nak": 0, "retransmissions": 0, "resent_data": 0,
             "sacked": 0, "coalesced_acks": 0, "ack_records": 0}
    path_ids = set()
    for pcap in pcaps:
        frames = read_pcap(pcap)
        pkts = pdml(ts, pcap, args.lua, extra)
        c.eq(f"{pcap}: frames decoded", len(pkts), len(frames))
        c.true(len(frames) > 0, f"{pcap}: empty capture")
        base = {}  # (ip.src, ip.dst, dest_qp) -> udp source port - path id of data frames
        data_seen = set()  # (ip.src, ip.dst, dest_qp, stream, msg_seq, offset)
        for i, (pkt, fr) in enumerate(zip(pkts, frames), start=1):
            w = f"{os.path.basename(pcap)} frame {i}"
            total += 1
            check_clean(c, i, pkt)
            c.true("metaroce" in pkt, f"{w}: not decoded as MetaRoCE")
            if "metaroce" not in pkt:
                continue
            op = num(pkt, "metaroce.opcode")
            c.true(op in MR_OPCODES, f"{w}: opcode {op} not in the MetaRoCE set")
            for pid in nums(pkt, "metaroce.path_id"):
                c.true(pid < paths, f"{w}: path id {pid} >= {paths} paths")
                path_ids.add(pid)
            c.eq(f"{w} metaroce.icrc.status", num(pkt, "metaroce.icrc.status"), 1)
            c.eq(f"{w} metaroce.icrc (Lua) = stored", num(pkt, "metaroce.icrc"),
                 icrc_of_frame(fr)[1])
            check_zlib_icrc(c, w, fr)
            if op in MR_DATA:
                stats["data"] += 1
                c.true(num(pkt, "metaroce.stream") is not None, f"{w}: data frame without stream")
                pid = num(pkt, "metaroce.path_id")
                key = (shows(pkt, "ip.src")[0], shows(pkt, "ip.dst")[0],
                       num(pkt, "metaroce.dest_qp"))
                # Path i of a connection uses UDP source port base + i (re-homed paths, after
                # a failure, would move; none fail here).
                dk = key + (num(pkt, "metaroce.stream"), num(pkt, "metaroce.msg_seq"),
                            num(pkt, "metaroce.offset"))
                # A MetaRoCE retransmission may leave on another path with a new PSN (the Lua
                # flags only same path + PSN repeats): count repeats of the same data too.
                stats["resent_data"] += dk in data_seen
                data_seen.add(dk)
                b = num(pkt, "udp.srcport") - pid
                c.eq(f"{w} udp.srcport - path id", b, base.setdefault(key, b))
                c.true(num(pkt, "udp.dstport") in info["ports"],
                       f"{w}: UDP destination port {num(pkt, 'udp.dstport')} not a data port")
            elif op == MR_ACK:
                stats["ack"] += 1
                c.true(num(pkt, "metaroce.ack.cum_psn") is not None, f"{w}: ACK without cum PSN")
                stats["sacked"] += (num(pkt, "metaroce.ack.sack_count") or 0) > 0
            elif op == MR_ACK_COALESCED:
                stats["ack"] += 1
                stats["coalesced_acks"] += 1
                check_cack_invariants(c, w, pkt, fr, stats)
            elif op == MR_NAK:
                stats["nak"] += 1
            stats["retransmissions"] += num(pkt, "metaroce.retransmission") == 1
        err = expert_errors(ts, pcap, args.lua, extra)
        c.true(not err, f"{pcap}: -z expert,error lists errors:\n{err}")
    c.true(stats["data"] > 0, "no data frames")
    c.true(stats["ack"] > 0, "no ACK frames")
    # The engine's default ACK policy ("coalesced") sends MR_ACK_COALESCED only.
    c.true(stats["coalesced_acks"] > 0 and stats["ack_records"] >= stats["coalesced_acks"],
           "no MR_ACK_COALESCED frames with ACK records (the default ackPolicy is \"coalesced\")")
    if paths > 1:
        c.true(len(path_ids) > 1, f"only path ids {sorted(path_ids)} of {paths} used")
    if info.get("lost_sent"):
        c.true(stats["resent_data"] > 0,
               f"{info['lost_sent']} frames sent were lost but no data is sent twice")
    c.finish(f"{total} frames, path ids {sorted(path_ids)} of {paths}, {stats}")


def check_cack_invariants(c, w, pkt, fr, stats):
    """An MR_ACK_COALESCED of a real run: RecordCount records, each complete (cumulative and
    trigger PSN, AckDelay in units of 8 ns), with a SACK bitmap iff its flags have FLAG_SACK,
    and a datagram of exactly the length those records make."""
    recs = cack_records(pkt)
    c.eq(f"{w} ACK records shown = metaroce.cack.record_count", len(recs),
         num(pkt, "metaroce.cack.record_count"))
    c.true(num(pkt, "metaroce.cack.rate_hint_mbps") is not None, f"{w}: no rate hint")
    flags = []
    for j, fields in enumerate(recs, start=1):
        rw = f"{w} record {j}"
        for f in ("path_id", "cum_psn", "trigger_psn", "ack_delay"):
            c.true(num(fields, "metaroce.cack." + f) is not None, f"{rw}: no metaroce.cack.{f}")
        f = num(fields, "metaroce.cack.flags") or 0
        flags.append({"ack_flags": f})
        has_sack = (f & FLAG_SACK) != 0
        c.eq(f"{rw} metaroce.cack.has_sack", num(fields, "metaroce.cack.has_sack"), int(has_sack))
        c.eq(f"{rw} SACK bitmap shown", len(shows(fields, "metaroce.cack.sack")), int(has_sack))
        delay = num(fields, "metaroce.cack.ack_delay")
        c.eq(f"{rw} metaroce.cack.ack_delay_ns", num(fields, "metaroce.cack.ack_delay_ns"),
             None if delay is None else delay * ACK_DELAY_UNIT_NS)
        stats["ack_records"] += 1
        stats["sacked"] += (num(fields, "metaroce.cack.sack_count") or 0) > 0
    udp_len = int.from_bytes(fr[ETH + IP4 + 4:ETH + IP4 + 6], "big")
    c.eq(f"{w} datagram length = 12 + 8 + 16 n (+ 32 per SACK) + 4",
         cack_datagram_length(flags), udp_len - UDP)


def check_rocev2(args, ts, pcaps, info, lua=None):
    c = Checker(f"{args.source}-rocev2" + ("-chained" if lua else ""))
    extra = decode_as_lua(info) if lua else decode_as(info)
    total = 0
    counts = {}
    retrans = 0
    naks = 0
    for pcap in pcaps:
        frames = read_pcap(pcap)
        pkts = pdml(ts, pcap, lua, extra)
        c.eq(f"{pcap}: frames decoded", len(pkts), len(frames))
        c.true(len(frames) > 0, f"{pcap}: empty capture")
        sent = set()  # (ip.src, ip.dst, dest_qp, psn) of data frames
        for i, (pkt, fr) in enumerate(zip(pkts, frames), start=1):
            w = f"{os.path.basename(pcap)} frame {i}"
            total += 1
            check_clean(c, i, pkt)
            if lua:
                c.true("metaroce" not in pkt, f"{w}: RoCEv2 frame taken by the MetaRoCE dissector")
                c.eq(f"{w} roce_icrc.status", num(pkt, "roce_icrc.status"), 1)
            else:
                c.true(not any(k.startswith("metaroce") or k.startswith("roce_icrc")
                               for k in pkt),
                       f"{w}: MetaRoCE Lua dissector loaded in the run without it")
                c.true(not any(k.startswith("_ws.expert") for k in pkt),
                       f"{w}: expert info {shows(pkt, '_ws.expert.message')}")
            c.true("infiniband" in pkt, f"{w}: not decoded by Wireshark's InfiniBand dissector")
            c.true("infiniband.mad" not in pkt, f"{w}: payload decoded as a MAD")
            if "infiniband" not in pkt:
                continue
            op = num(pkt, "infiniband.bth.opcode")
            opnames = [el.get("showname") for el in pkt.get("infiniband.bth.opcode", [])]
            if op == ROCE_CNP:
                counts["CNP"] = counts.get("CNP", 0) + 1
            else:
                c.true(op in IB_OPCODE_NAMES, f"{w}: opcode {op} is not an RC opcode we send")
                if op in IB_OPCODE_NAMES:
                    c.eq(f"{w} opcode name", opnames, [f"Opcode: {IB_OPCODE_NAMES[op]} ({op})"])
                    name = IB_OPCODE_NAMES[op].split(" - ")[1]
                    counts[name] = counts.get(name, 0) + 1
                trailer = int.from_bytes(fr[-4:], "big")
                c.eq(f"{w} infiniband.invariant.crc", num(pkt, "infiniband.invariant.crc"),
                     trailer)
            check_zlib_icrc(c, w, fr)
            psn = num(pkt, "infiniband.bth.psn")
            if op is not None and op <= 0x0B:
                key = (shows(pkt, "ip.src")[0], shows(pkt, "ip.dst")[0],
                       num(pkt, "infiniband.bth.destqp"), psn)
                retrans += key in sent
                sent.add(key)
            if op == 0x11:
                syn = num(pkt, "infiniband.aeth.syndrome")
                naks += syn is not None and (syn & 0x60) == 0x60
        err = expert_errors(ts, pcap, lua, extra)
        c.true(not err, f"{pcap}: -z expert,error lists errors:\n{err}")
    c.true(any(k.startswith("RDMA WRITE") or k.startswith("SEND") for k in counts),
           "no data frames")
    c.true("Acknowledge" in counts, "no ACK frames")
    if info.get("lost_sent"):
        c.true(retrans > 0, f"{info['lost_sent']} frames sent were lost but no PSN is sent twice")
    c.finish(f"{total} frames, {retrans} retransmissions, {naks} NAKs, opcodes {counts}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, choices=["sim", "hil"])
    ap.add_argument("--transport", required=True, choices=["metaroce", "rocev2"])
    ap.add_argument("--program", default="",
                    help="metaroce-pcap-capture (sim) or metaroce-perf (hil)")
    ap.add_argument("--topology", default="single", choices=["single", "leafspine"])
    ap.add_argument("--paths", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1, help="simulation run number")
    ap.add_argument("--loss", type=float, default=0.01, help="HIL client egress loss")
    ap.add_argument("--data-port", type=int, default=4921,
                    help="HIL server data port (the client uses the next one)")
    ap.add_argument("--tshark", default="")
    ap.add_argument("--lua", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    tshark = args.tshark or shutil.which("tshark")
    if not tshark or not os.path.exists(tshark):
        print("SKIP: tshark not found (install Debian's tshark package to run the Wireshark "
              "tests)")
        return SKIP
    if not args.program or not os.access(args.program, os.X_OK):
        what = "metaroce-pcap-capture" if args.source == "sim" else "metaroce-perf"
        print(f"SKIP: {what} is not built ({args.program or 'no path given'})")
        return SKIP
    args.lua = os.path.abspath(args.lua)
    os.makedirs(args.workdir, exist_ok=True)
    ts = Tshark(tshark, args.workdir)
    try:
        run = run_sim if args.source == "sim" else run_hil
        pcaps, info = run(args, args.workdir)
        if args.transport == "metaroce":
            check_metaroce(args, ts, pcaps, info)
        else:
            check_rocev2(args, ts, pcaps, info)
            check_rocev2(args, ts, pcaps, info, args.lua)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
