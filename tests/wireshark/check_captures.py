#!/usr/bin/env python3
# Copyright (c) 2026 MetaRoCE-ns3 authors
# SPDX-License-Identifier: GPL-2.0-only
"""Wireshark checks of our wire encoding (CTest label `wireshark`).

One script, several checks (--check):

  generate        run metaroce-wireshark-capture; check the pcap headers
  metaroce        tshark + tools/wireshark/metaroce.lua over metaroce.pcap (coalesced ACKs,
                  every ACK record) and metaroce-per-path.pcap (per-path MR_ACKs): every frame
                  decodes as MetaRoCE, opcode shown by name, no malformed packets and no expert
                  info but the intended notes (retransmission, NAK, ECE), every field equals
                  the generator's sidecar (what the engine sent), protocol and info columns,
                  ICRC good (Lua and Python agree)
  rocev2          tshark WITHOUT our Lua over rocev2.pcap: Wireshark's own InfiniBand dissector
                  decodes every frame (opcode names, PSN, RETH, AETH, ImmDt) without malformed
                  packets or expert info; ICRC recomputed here with zlib is valid
  rocev2-chained  tshark WITH our Lua over rocev2.pcap: RoCEv2 still goes to Wireshark's
                  dissector unchanged, and the Lua RoCEv2 ICRC check says Good
  rocev2-read     as rocev2, over rocev2-read.pcap: RDMA READ Request/Response First/Middle/
                  Last/Only, Compare&Swap, Fetch&Add and Atomic Acknowledge decode in
                  Wireshark's own InfiniBand dissector (RETH, AETH, AtomicETH, AtomicAckETH
                  fields equal the sidecar), ICRC valid; a READ resent from a lost response's
                  PSN and an atomic answered twice with one saved original are in the capture
  rocev2-read-chained  the same with the Lua loaded
  metaroce-read   as metaroce, over metaroce-read.pcap (READ and atomics on MetaRoCE):
                  MR_READ_REQUEST/RESPONSE, MR_CMP_SWAP, MR_FETCH_ADD and MR_ATOMIC_RESPONSE by
                  name; MDH, RETH, AtomicETH, AtomicAckETH and payload equal the sidecar; every
                  answer names an earlier request, READ answers tile the READ; the first READ
                  answer packet and the first atomic answer were lost and resent unchanged
  irn             tshark + Lua over irn.pcap (RoCEv2 with rocev2.recovery = "irn"): every IRN
                  frame (0xE0-0xEB data, 0xF1 NACK) decodes as the Lua's "RoCEv2 IRN" (not as
                  Wireshark's InfiniBand, not malformed, no unknown opcode), BTH/RETH/IRH/ImmDt/
                  AETH/ISH fields, payload, retransmission marks and info column equal the
                  sidecar; ICRC good; the other frames (ACKs, CNPs) still go to InfiniBand
  negative        corrupted copies: a flipped payload bit is reported as a bad ICRC (expert
                  error); rewriting TTL and ECN (fields the ICRC masks) keeps it good; a
                  coalesced ACK whose RecordCount disagrees with its payload is malformed

Standard library only. Exits 77 (CTest SKIP_RETURN_CODE) if tshark is not installed.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SKIP = 77
SEVERITY_ERROR = 0x00800000  # _ws.expert.severity of PI_ERROR

PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
ETH, IP4, UDP = 14, 20, 8
HDRS = ETH + IP4 + UDP

# Wireshark 4.0's names of the InfiniBand RC opcodes the RoCEv2 engine sends.
IB_OPCODE_NAMES = {
    0x00: "Reliable Connection (RC) - SEND First",
    0x01: "Reliable Connection (RC) - SEND Middle",
    0x02: "Reliable Connection (RC) - SEND Last",
    0x03: "Reliable Connection (RC) - SEND Last with Immediate",
    0x04: "Reliable Connection (RC) - SEND Only",
    0x05: "Reliable Connection (RC) - SEND Only with Immediate",
    0x06: "Reliable Connection (RC) - RDMA WRITE First",
    0x07: "Reliable Connection (RC) - RDMA WRITE Middle",
    0x08: "Reliable Connection (RC) - RDMA WRITE Last",
    0x09: "Reliable Connection (RC) - RDMA WRITE Last with Immediate",
    0x0A: "Reliable Connection (RC) - RDMA WRITE Only",
    0x0B: "Reliable Connection (RC) - RDMA WRITE Only with Immediate",
    0x0C: "Reliable Connection (RC) - RDMA READ Request",
    0x0D: "Reliable Connection (RC) - RDMA READ response First",
    0x0E: "Reliable Connection (RC) - RDMA READ response Middle",
    0x0F: "Reliable Connection (RC) - RDMA READ response Last",
    0x10: "Reliable Connection (RC) - RDMA READ response Only",
    0x11: "Reliable Connection (RC) - Acknowledge",
    0x12: "Reliable Connection (RC) - ATOMIC Acknowledge",
    0x13: "Reliable Connection (RC) - CmpSwap",
    0x14: "Reliable Connection (RC) - FetchAdd",
}
ROCE_CNP = 0x81
RETH_OPCODES = {0x06, 0x0A, 0x0B, 0x0C}
# IB RC: AETH on Acknowledge, Atomic Acknowledge and READ Response First, Last and Only.
AETH_OPCODES = {0x0D, 0x0F, 0x10, 0x11, 0x12}
ATOMIC_OPCODES = {0x13, 0x14}
ATOMIC_ACK = 0x12
IMM_OPCODES = {0x03, 0x05, 0x09, 0x0B}

MR_OPCODES = {0xC0: "MR_WRITE", 0xC1: "MR_WRITE_IMM", 0xC2: "MR_SEND", 0xC3: "MR_SEND_IMM",
              0xC4: "MR_ACK", 0xC5: "MR_NAK", 0xC6: "MR_PROBE", 0xC7: "MR_NOP",
              0xC8: "MR_ACK_COALESCED", 0xC9: "MR_READ_REQUEST", 0xCA: "MR_READ_RESPONSE",
              0xCB: "MR_CMP_SWAP", 0xCC: "MR_FETCH_ADD", 0xCD: "MR_ATOMIC_RESPONSE"}
MR_DATA = {0xC0, 0xC1, 0xC2, 0xC3}
MR_ACK, MR_NAK, MR_ACK_COALESCED = 0xC4, 0xC5, 0xC8
MR_READ_REQUEST, MR_READ_RESPONSE, MR_CMP_SWAP, MR_FETCH_ADD, MR_ATOMIC_RESPONSE = range(0xC9, 0xCE)
MR_ATOMICS = {MR_CMP_SWAP, MR_FETCH_ADD}
MR_PAYLOAD = MR_DATA | {MR_READ_RESPONSE}  # opcodes whose payload is data (not ACK records)
BTH, MCH, ACK_RECORD, SACK_BYTES, ICRC = 12, 8, 16, 32, 4
MDH, RETH, ATOMIC_ETH, ATOMIC_ACK_ETH = 12, 16, 28, 8
# Datagram length of each READ/atomic opcode without payload and pad (docs/wire-format.md).
MR_READ_ATOMIC_HEADERS = {MR_READ_REQUEST: BTH + MDH + RETH + ICRC,
                          MR_READ_RESPONSE: BTH + MDH + ICRC,
                          MR_CMP_SWAP: BTH + MDH + ATOMIC_ETH + ICRC,
                          MR_FETCH_ADD: BTH + MDH + ATOMIC_ETH + ICRC,
                          MR_ATOMIC_RESPONSE: BTH + MDH + ATOMIC_ACK_ETH + ICRC}
FLAG_PROBE_REPLY, FLAG_SACK = 0x02, 0x08  # ACK flags; SACK: the record's bitmap follows
ACK_DELAY_UNIT_NS = 8

# IRN mode of the RoCEv2 baseline: IRN_x = 0xE0 | RC_x (data), IRN_NACK = 0xF1.
IRN_NACK = 0xF1
IRN_OPCODES = {0xE0 | rc: "IRN_" + IB_OPCODE_NAMES[rc].split(" - ")[1].upper()
               .replace(" WITH IMMEDIATE", "_IMM").replace("RDMA ", "").replace(" ", "_")
               for rc in range(0x00, 0x0C)}
IRN_OPCODES[IRN_NACK] = "IRN_NACK"


class Failure(Exception):
    pass


class Checker:
    """Collects failures so one run reports all of them (up to a limit)."""

    def __init__(self, name):
        self.name = name
        self.errors = []
        self.checked = 0

    def eq(self, what, got, want):
        self.checked += 1
        if got != want:
            self.fail(f"{what}: Wireshark shows {got!r}, engine sent {want!r}")

    def true(self, cond, what):
        self.checked += 1
        if not cond:
            self.fail(what)

    def fail(self, msg):
        self.errors.append(msg)

    def finish(self, summary):
        if self.errors:
            shown = self.errors[:40]
            more = len(self.errors) - len(shown)
            raise Failure(f"{self.name}: {len(self.errors)} mismatches\n  " + "\n  ".join(shown) +
                          (f"\n  ... and {more} more" if more else ""))
        print(f"{self.name}: OK, {self.checked} assertions; {summary}")


# ----------------------------------------------------------------------------------------------
# pcap and ICRC
# ----------------------------------------------------------------------------------------------

def read_pcap(path):
    """Return the list of frames (bytes) of a nanosecond Ethernet pcap written by the generator."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise Failure(f"{path}: shorter than a pcap header")
    magic, vmaj, vmin, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", data, 0)
    if magic != PCAP_MAGIC_NS or (vmaj, vmin) != (2, 4) or linktype != LINKTYPE_ETHERNET:
        raise Failure(f"{path}: magic {magic:#x} version {vmaj}.{vmin} linktype {linktype}; "
                      f"want {PCAP_MAGIC_NS:#x} 2.4 linktype {LINKTYPE_ETHERNET}")
    frames = []
    off = 24
    while off < len(data):
        _, nsec, incl, orig = struct.unpack_from("<IIII", data, off)
        if nsec >= 1000000000 or incl != orig or off + 16 + incl > len(data):
            raise Failure(f"{path}: bad record header at byte {off}")
        frames.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return frames


def write_pcap(path, frames, template):
    with open(template, "rb") as f:
        header = f.read(24)
    with open(path, "wb") as f:
        f.write(header)
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)))
            f.write(fr)


def refresh_icrc(frame):
    """Store the recomputed ICRC in the trailer of frame (a bytearray edited on purpose)."""
    udp_len = struct.unpack(">H", frame[ETH + IP4 + 4:ETH + IP4 + 6])[0]
    end = ETH + IP4 + udp_len
    frame[end - 4:end] = icrc_of_frame(frame)[0].to_bytes(4, "little")


def ipv4_checksum(hdr):
    s = 0
    for i in range(0, len(hdr), 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icrc_of_frame(frame):
    """RoCEv2 ICRC (docs/encapsulation-and-icrc.md) of an Ethernet/IPv4/UDP frame, computed
    independently of the engine: zlib CRC-32 over 8 x 0xFF, the IPv4 header with TOS, TTL and
    checksum set to ones, the UDP header with the checksum set to ones, the BTH with byte 4 set
    to ones, and the rest of the datagram up to the ICRC. Returns (computed, stored)."""
    if frame[12:14] != b"\x08\x00" or frame[14] != 0x45:
        raise Failure("not an IPv4 frame without options")
    ip = bytearray(frame[ETH:ETH + IP4])
    udp = bytearray(frame[ETH + IP4:HDRS])
    udp_len = struct.unpack(">H", udp[4:6])[0]
    dgram = bytearray(frame[HDRS:HDRS + udp_len - UDP])
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10:12] = b"\xff\xff"
    udp[6:8] = b"\xff\xff"
    dgram[4] = 0xFF
    computed = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(dgram[:-4])) & 0xFFFFFFFF
    stored = int.from_bytes(frame[HDRS + udp_len - UDP - 4:HDRS + udp_len - UDP], "little")
    return computed, stored


# ----------------------------------------------------------------------------------------------
# tshark
# ----------------------------------------------------------------------------------------------

class Tshark:
    def __init__(self, exe, workdir):
        self.exe = exe
        # A private HOME/config dir: no personal plugins (an installed metaroce.lua would
        # otherwise load in the "without Lua" run) and no user preferences.
        self.home = os.path.join(workdir, "tshark-home")
        os.makedirs(self.home, exist_ok=True)
        self.env = dict(os.environ, HOME=self.home, XDG_CONFIG_HOME=self.home,
                        WIRESHARK_CONFIG_DIR=self.home, LC_ALL="C")
        self.env.pop("WIRESHARK_PLUGIN_DIR", None)

    def run(self, args, lua=None):
        cmd = [self.exe, "-n"]
        if lua:
            cmd += ["-X", "lua_script:" + lua]
        cmd += args
        p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        err = "\n".join(line for line in p.stderr.decode(errors="replace").splitlines()
                        if "Running as user" not in line and line.strip())
        if p.returncode != 0:
            raise Failure(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}")
        if err:
            # Lua load/runtime errors and dissector warnings land here.
            raise Failure(f"{' '.join(cmd)} wrote to stderr:\n{err}")
        return p.stdout

    def pdml(self, pcap, lua=None):
        """Decode pcap; return a list of packets, each a dict field/proto name -> [element]."""
        out = self.run(["-r", pcap, "-T", "pdml"], lua)
        packets = []
        for pkt in ET.fromstring(out).iter("packet"):
            fields = {}
            for el in pkt.iter():
                name = el.get("name")
                if name:
                    fields.setdefault(name, []).append(el)
            packets.append(fields)
        return packets

    def expert_errors(self, pcap, lua=None):
        """Return the text of `-z expert,error` if it lists any error, else ''."""
        out = self.run(["-r", pcap, "-q", "-z", "expert,error"], lua).decode(errors="replace")
        return out if "Errors" in out else ""


def shows(pkt, name):
    return [el.get("show") for el in pkt.get(name, [])]


def num(pkt, name):
    """The single numeric value of field name (None if absent)."""
    vals = shows(pkt, name)
    if not vals:
        return None
    if len(vals) != 1:
        raise Failure(f"{name} occurs {len(vals)} times")
    return int(vals[0], 0)


def nums(pkt, name):
    return [int(v, 0) for v in shows(pkt, name)]


def subfields(el):
    """The fields below PDML element el, as a packet dict (name -> [element])."""
    fields = {}
    for sub in el.iter():
        name = sub.get("name")
        if sub is not el and name:
            fields.setdefault(name, []).append(sub)
    return fields


def cack_records(pkt):
    """The ACK records of an MR_ACK_COALESCED, each as a packet dict of its own fields."""
    return [subfields(el) for el in pkt.get("metaroce.cack.record", [])]


def cack_datagram_length(records):
    """Datagram length of a coalesced ACK with these records (dicts with "ack_flags"):
    BTH + MCH + 16 per record (+ 32 with a SACK bitmap) + ICRC."""
    return BTH + MCH + sum(ACK_RECORD + (SACK_BYTES if r["ack_flags"] & FLAG_SACK else 0)
                           for r in records) + ICRC


def hexbytes(pkt, name):
    vals = shows(pkt, name)
    if len(vals) != 1:
        return None
    return bytes.fromhex(vals[0].replace(":", ""))


def check_clean(c, i, pkt):
    """No malformed-packet item, no expert info of severity error or above."""
    c.true("_ws.malformed" not in pkt, f"frame {i}: malformed packet")
    for sev in nums(pkt, "_ws.expert.severity"):
        if sev >= SEVERITY_ERROR:
            msgs = shows(pkt, "_ws.expert.message")
            c.fail(f"frame {i}: expert error: {msgs}")


def load_sidecar(workdir, stem):
    with open(os.path.join(workdir, stem + ".json")) as f:
        return json.load(f)


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------

def check_generate(args, ts):
    os.makedirs(args.workdir, exist_ok=True)
    p = subprocess.run([args.generator, "--out=" + args.workdir], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    sys.stdout.write(p.stdout.decode(errors="replace"))
    if p.returncode != 0:
        raise Failure(f"generator failed ({p.returncode})")
    for stem in ("metaroce", "metaroce-per-path", "rocev2", "irn", "rocev2-read",
                 "metaroce-read"):
        frames = read_pcap(os.path.join(args.workdir, stem + ".pcap"))
        side = load_sidecar(args.workdir, stem)
        if len(frames) != len(side["frames"]) or not frames:
            raise Failure(f"{stem}: {len(frames)} frames in the pcap, "
                          f"{len(side['frames'])} in the sidecar")
    print("generate: OK")


def check_path_state(c, w, fields, prefix, s, bitmap_present=True):
    """One path's receive state, as the MAH (prefix metaroce.ack) or an ACK record (prefix
    metaroce.cack) shows it in fields, against sidecar keys s: path, epoch, flags and their
    bits, CE count, cumulative and trigger PSNs, and the SACK bitmap with its SACKed PSNs (a
    record without a bitmap must show none and a SACK count of 0)."""
    for f, k in (("path_id", "path_id"), ("path_epoch", "path_epoch"), ("flags", "ack_flags"),
                 ("ce_count", "ce_count"), ("cum_psn", "cum_psn"), ("trigger_psn", "trigger_psn")):
        c.eq(f"{w} {prefix}.{f}", num(fields, f"{prefix}.{f}"), s[k])
    for bit, f in enumerate(("ece", "probe_reply", "duplicate")):
        c.eq(f"{w} {prefix}.{f}", num(fields, f"{prefix}.{f}"), (s["ack_flags"] >> bit) & 1)
    if bitmap_present:
        bitmap = bytearray(SACK_BYTES)
        for psn in s["sack_psns"]:
            bit = (psn - s["cum_psn"] - 1) & 0xFFFFFF
            bitmap[bit // 8] |= 0x80 >> (bit % 8)
        c.eq(f"{w} {prefix}.sack", hexbytes(fields, f"{prefix}.sack"), bytes(bitmap))
    else:
        c.eq(f"{w} {prefix}.sack (no bitmap)", shows(fields, f"{prefix}.sack"), [])
        c.eq(f"{w} engine SACK PSNs without a bitmap", s["sack_psns"], [])
    c.eq(f"{w} {prefix}.sacked_psn", nums(fields, f"{prefix}.sacked_psn"), s["sack_psns"])
    c.eq(f"{w} {prefix}.sack_count", num(fields, f"{prefix}.sack_count"), len(s["sack_psns"]))


def check_cack(c, w, pkt, s, stats, first_sent):
    """An MR_ACK_COALESCED: the MCH and every ACK record against the sidecar. A record's
    AckDelay (how long the responder held the arrival of its trigger PSN) is at most the time
    since that PSN was first sent on its path and epoch (first_sent: (ip src, ip dst, path,
    epoch, PSN) -> time_ns of the first MDH frame with them)."""
    c.eq(f"{w} ACK records (engine parser)", s["records_parse"], "OK")
    c.eq(f"{w} metaroce.cack.rate_hint_mbps", num(pkt, "metaroce.cack.rate_hint_mbps"),
         s["rate_hint"])
    c.eq(f"{w} metaroce.cack.record_count", num(pkt, "metaroce.cack.record_count"),
         s["record_count"])
    recs = cack_records(pkt)
    c.eq(f"{w} ACK records shown", len(recs), len(s["records"]))
    c.eq(f"{w} datagram length = 12 + 8 + 16 n (+ 32 per SACK) + 4",
         cack_datagram_length(s["records"]), s["length"])
    for j, (fields, r) in enumerate(zip(recs, s["records"]), start=1):
        rw = f"{w} record {j}"
        has_sack = (r["ack_flags"] & FLAG_SACK) != 0
        check_path_state(c, rw, fields, "metaroce.cack", r, has_sack)
        c.eq(f"{rw} metaroce.cack.has_sack", num(fields, "metaroce.cack.has_sack"), int(has_sack))
        c.eq(f"{rw} metaroce.cack.ack_delay", num(fields, "metaroce.cack.ack_delay"),
             r["ack_delay"])
        c.eq(f"{rw} metaroce.cack.ack_delay_ns", num(fields, "metaroce.cack.ack_delay_ns"),
             r["ack_delay"] * ACK_DELAY_UNIT_NS)
        sent = first_sent.get((s["ip_dst"], s["ip_src"], r["path_id"], r["path_epoch"],
                               r["trigger_psn"]))
        c.true(sent is not None, f"{rw}: trigger PSN {r['trigger_psn']} of path {r['path_id']} "
               f"epoch {r['path_epoch']} was never sent")
        if r["ack_flags"] & FLAG_PROBE_REPLY:
            # The engine measures a probe reply's AckDelay from the path's reset (its
            # triggerAt is not set by the probe), so it is not bounded here; counted.
            stats["probe_reply_delay_unchecked"] = stats.get("probe_reply_delay_unchecked", 0) + 1
        elif sent is not None:
            c.true(r["ack_delay"] * ACK_DELAY_UNIT_NS <= s["time_ns"] - sent,
                   f"{rw}: AckDelay {r['ack_delay'] * ACK_DELAY_UNIT_NS} ns, but its trigger PSN "
                   f"was first sent {s['time_ns'] - sent} ns before the ACK")
            stats["ack_delay_bounded"] += 1
        stats["record_sack"] += has_sack
        stats["record_no_sack"] += not has_sack
        stats["sacked"] += bool(r["sack_psns"])
        stats["ack_delay"] += r["ack_delay"] > 0
        stats["ece"] += r["ack_flags"] & 1
        stats["probe_reply"] += (r["ack_flags"] >> 1) & 1
    stats["multi_record"] += len(s["records"]) > 1


def expert_names(pkt):
    """The expert infos of a decoded packet, each named by the expert item it registers (for
    example metaroce.retransmission.expert), sorted: whichever dissector raised them."""
    names = []
    for el in pkt.get("_ws.expert", []):
        names += [sub.get("name") for sub in el
                  if sub.get("name") and not sub.get("name").startswith("_ws.expert")]
    return sorted(names)


def info_column(ts, pcap, lua):
    """frame number -> (protocol column, info column)."""
    cols = ts.run(["-r", pcap, "-T", "fields", "-E", "separator=|", "-e", "frame.number",
                   "-e", "_ws.col.Protocol", "-e", "_ws.col.Info"], lua)
    info = {}
    for line in cols.decode(errors="replace").splitlines():
        n, proto, text = line.split("|", 2)
        info[int(n)] = (proto, text)
    return info


def check_read_atomic_frame(c, w, pkt, s):
    """The READ/atomic headers of one MetaRoCE frame: AtomicETH on MR_CMP_SWAP/MR_FETCH_ADD,
    AtomicAckETH on MR_ATOMIC_RESPONSE (both under metaroce.atomic.*, absent on every other
    opcode), and the datagram length of the five READ/atomic opcodes."""
    op = s["opcode"]
    atomic = op in MR_ATOMICS
    for f in ("va", "rkey", "swap_add", "compare"):
        c.eq(f"{w} metaroce.atomic.{f}", num(pkt, "metaroce.atomic." + f),
             s[f] if atomic else None)
    c.eq(f"{w} metaroce.atomic.original", num(pkt, "metaroce.atomic.original"),
         s["original"] if op == MR_ATOMIC_RESPONSE else None)
    want = {MR_CMP_SWAP: ["Atomic Extended Transport Header (AtomicETH)"],
            MR_FETCH_ADD: ["Atomic Extended Transport Header (AtomicETH)"],
            MR_ATOMIC_RESPONSE: ["Atomic Acknowledge Extended Transport Header (AtomicAckETH)"]}
    c.eq(f"{w} metaroce.atomic_eth header", [el.get("showname") for el in
                                             pkt.get("metaroce.atomic_eth", [])], want.get(op, []))
    if op in MR_READ_ATOMIC_HEADERS:
        c.eq(f"{w} datagram length = headers + payload + pad (wire-format.md)", s["length"],
             MR_READ_ATOMIC_HEADERS[op] + s["payload_len"] + s["pad"])


def check_metaroce_capture(c, args, ts, stem):
    """One MetaRoCE capture against its sidecar. Returns the opcodes seen, the frame count and
    the counts of what the scenario must exercise."""
    pcap = os.path.join(args.workdir, stem + ".pcap")
    side = load_sidecar(args.workdir, stem)["frames"]
    frames = read_pcap(pcap)
    pkts = ts.pdml(pcap, args.lua)
    info = info_column(ts, pcap, args.lua)
    c.eq(f"{stem} frame count", len(pkts), len(side))
    seen = {}
    stats = {"retransmissions": 0, "sacked": 0, "ece": 0, "probe_reply": 0, "padded": 0,
             "dropped": 0, "multi_record": 0, "record_sack": 0, "record_no_sack": 0,
             "ack_delay": 0, "ack_delay_bounded": 0}
    first_sent = {}  # (ip src, ip dst, path, epoch, PSN) -> time_ns of the first MDH frame
    for i, (pkt, s, fr) in enumerate(zip(pkts, side, frames), start=1):
        w = f"{stem} frame {i}"
        check_clean(c, i, pkt)
        c.true("metaroce" in pkt, f"{w}: not decoded as MetaRoCE")
        if "metaroce" not in pkt:
            continue
        c.eq(f"{w} parse status (engine)", s["parse"], "OK")
        op = s["opcode"]
        c.eq(f"{w} metaroce.opcode", num(pkt, "metaroce.opcode"), op)
        c.eq(f"{w} opcode name", [el.get("showname") for el in pkt.get("metaroce.opcode", [])],
             [f"Opcode: {MR_OPCODES[op]} (0x{op:02x})"])
        c.eq(f"{w} MetaRoCE tree", [el.get("showname") for el in pkt.get("metaroce", [])],
             [f"MetaRoCE, {MR_OPCODES[op]}"])
        c.eq(f"{w} ip.src", shows(pkt, "ip.src"), [s["ip_src"]])
        c.eq(f"{w} ip.dst", shows(pkt, "ip.dst"), [s["ip_dst"]])
        c.eq(f"{w} udp.srcport", num(pkt, "udp.srcport"), s["udp_sport"])
        c.eq(f"{w} udp.dstport", num(pkt, "udp.dstport"), s["udp_dport"])
        for f, k in (("psn", "psn"), ("dest_qp", "dest_qp"), ("pad", "pad"), ("pkey", "pkey"),
                     ("ack_req", "ack_req"), ("se", "solicited"), ("becn", "becn")):
            c.eq(f"{w} metaroce.{f}", num(pkt, "metaroce." + f), s[k])
        # metaroce.path_id is on every frame: MDH field, or hidden copies from the MAH/MNH and
        # from each ACK record of a coalesced ACK.
        want_paths = ([r["path_id"] for r in s["records"]] if op == MR_ACK_COALESCED
                      else [s["path_id"]])
        c.eq(f"{w} metaroce.path_id", nums(pkt, "metaroce.path_id"), want_paths)
        if op not in (MR_ACK, MR_NAK, MR_ACK_COALESCED):
            for f in ("path_epoch", "stream", "msg_seq", "offset"):
                c.eq(f"{w} metaroce.{f}", num(pkt, "metaroce." + f), s[f])
        # The sidecar files the AtomicETH's VA and R_Key under va and rkey; the Lua shows them
        # as metaroce.atomic.va and .rkey, not as a RETH.
        for f in ("va", "rkey", "dma_len", "recv_slot", "msg_len", "imm"):
            c.eq(f"{w} metaroce.{f}", num(pkt, "metaroce." + f),
                 None if op in MR_ATOMICS else s.get(f))
        check_read_atomic_frame(c, w, pkt, s)
        # On every frame: 0 on ACK, NAK, probe, NOP, READ request and atomics; the records'
        # length on a coalesced ACK.
        c.eq(f"{w} metaroce.payload_len", num(pkt, "metaroce.payload_len"),
             s["payload_len"] if op in MR_PAYLOAD or op == MR_ACK_COALESCED else 0)
        if op in MR_PAYLOAD:
            pb = hexbytes(pkt, "metaroce.payload") if s["payload_len"] else b""
            c.eq(f"{w} payload bytes", pb, fr[HDRS + s["length"] - 4 - s["pad"] -
                                              s["payload_len"]:HDRS + s["length"] - 4 - s["pad"]])
            stats["padded"] += s["pad"] != 0
        else:
            c.true("metaroce.payload" not in pkt, f"{w}: payload on {s['opcode_name']}")
        if op == MR_ACK:
            check_path_state(c, w, pkt, "metaroce.ack", s)
            c.eq(f"{w} metaroce.ack.rate_hint_mbps", num(pkt, "metaroce.ack.rate_hint_mbps"),
                 s["rate_hint"])
            stats["sacked"] += bool(s["sack_psns"])
            stats["ece"] += s["ack_flags"] & 1
            stats["probe_reply"] += (s["ack_flags"] >> 1) & 1
        if "stream" in s:
            first_sent.setdefault((s["ip_src"], s["ip_dst"], s["path_id"], s["path_epoch"],
                                   s["psn"]), s["time_ns"])
        if op == MR_ACK_COALESCED:
            check_cack(c, w, pkt, s, stats, first_sent)
        else:
            c.true("metaroce.cack" not in pkt, f"{w}: coalesced ACK fields on {s['opcode_name']}")
        if op == MR_NAK:
            for f, k in (("stream", "stream"), ("syndrome", "nak_syndrome"), ("path_id", "path_id"),
                         ("msg_seq", "msg_seq"), ("offset", "offset"), ("path_epoch", "path_epoch"),
                         ("psn", "nak_psn")):
                c.eq(f"{w} metaroce.nak.{f}", num(pkt, "metaroce.nak." + f), s[k])
        # Retransmission: same addresses, QP, path, epoch and PSN as an earlier frame.
        retx = False
        if "stream" in s and op != MR_NAK:
            key = (s["ip_src"], s["ip_dst"], s["dest_qp"], s["path_id"], s["path_epoch"], s["psn"])
            retx = key in seen
            seen.setdefault(key, i)
            c.eq(f"{w} metaroce.retransmission", num(pkt, "metaroce.retransmission"),
                 1 if retx else None)
            if retx:
                c.eq(f"{w} metaroce.retransmission_of", num(pkt, "metaroce.retransmission_of"),
                     seen[key])
                stats["retransmissions"] += 1
        # Expert info: only the dissector's intended notes (retransmission, NAK) and ECE chats
        # (one per ACK or ACK record with ECE), nothing else from any dissector.
        ece = (sum(r["ack_flags"] & 1 for r in s["records"]) if op == MR_ACK_COALESCED
               else s["ack_flags"] & 1 if op == MR_ACK else 0)
        want_experts = sorted(["metaroce.retransmission.expert"] * retx +
                              ["metaroce.nak.expert"] * (op == MR_NAK) +
                              ["metaroce.ack.ece.expert"] * ece)
        c.eq(f"{w} expert info", expert_names(pkt), want_experts)
        # Columns: protocol, opcode name first, the MDH summary, the retransmission mark.
        proto, text = info.get(i, ("", ""))
        c.eq(f"{w} protocol column", proto, "MetaRoCE")
        c.true(text.split(" ")[0] == MR_OPCODES[op], f"{w}: info column {text!r}")
        if "stream" in s and op != MR_NAK:
            mdh = (f"path={s['path_id']} psn={s['psn']} stream={s['stream']} "
                   f"msg={s['msg_seq']} off={s['offset']}")
            c.true(mdh in text, f"{w}: info column {text!r} lacks {mdh!r}")
        if op in MR_PAYLOAD:
            c.true(f" len={s['payload_len']}" in text, f"{w}: info column {text!r} lacks "
                   f"len={s['payload_len']}")
        c.eq(f"{w} info column [retransmission]", text.endswith(" [retransmission]"), retx)
        # ICRC: stored value, Lua's verdict, and an independent zlib computation.
        computed, stored = icrc_of_frame(fr)
        c.eq(f"{w} engine ICRC check", s["icrc_ok"], True)
        c.eq(f"{w} stored ICRC", stored, s["icrc"])
        c.eq(f"{w} zlib ICRC", computed, s["icrc"])
        c.eq(f"{w} metaroce.icrc", num(pkt, "metaroce.icrc"), s["icrc"])
        c.eq(f"{w} metaroce.icrc.computed", num(pkt, "metaroce.icrc.computed"), s["icrc"])
        c.eq(f"{w} metaroce.icrc.status", num(pkt, "metaroce.icrc.status"), 1)
        stats["dropped"] += s["dropped"]
    err = ts.expert_errors(pcap, args.lua)
    c.true(not err, f"{stem}: -z expert,error lists errors:\n{err}")
    return {s["opcode"] for s in side}, len(pkts), stats


def check_metaroce(args, ts):
    c = Checker("metaroce")
    summary = []
    for stem in ("metaroce", "metaroce-per-path"):
        kinds, n, stats = check_metaroce_capture(c, args, ts, stem)
        # The scenario must exercise what the dissector decodes: MR_ACK_COALESCED under the
        # default ACK policy, MR_ACK (and no coalesced ACK) under "per-path".
        ack = MR_ACK_COALESCED if stem == "metaroce" else MR_ACK
        for op in (0xC0, 0xC1, 0xC2, 0xC3, ack, 0xC5, 0xC6, 0xC7):
            c.true(op in kinds, f"{stem}: capture has no {MR_OPCODES[op]} frame")
        other = MR_ACK if ack == MR_ACK_COALESCED else MR_ACK_COALESCED
        c.true(other not in kinds, f"{stem}: capture has {MR_OPCODES[other]} frames")
        if stem != "metaroce":
            for k in ("multi_record", "record_sack", "record_no_sack", "ack_delay",
                      "ack_delay_bounded"):
                del stats[k]
        for k, v in stats.items():
            c.true(v > 0, f"{stem}: capture has no frame with {k}")
        summary.append(f"{stem}: {n} frames, opcodes {sorted(MR_OPCODES[o] for o in kinds)}, "
                       f"{stats}")
    c.finish("; ".join(summary))


def check_metaroce_read(args, ts):
    """metaroce-read.pcap: the metaroce per-frame checks (with the Lua) over READ and atomics on
    MetaRoCE, then the scenario: every READ/atomic opcode, each answer names an earlier request
    of the other side, READ answers tile the READ, and the first READ answer packet and the
    first atomic answer, lost, were resent with the same content."""
    stem = "metaroce-read"
    c = Checker(stem)
    kinds, n, stats = check_metaroce_capture(c, args, ts, stem)
    side = load_sidecar(args.workdir, stem)["frames"]
    frames = read_pcap(os.path.join(args.workdir, stem + ".pcap"))
    for op in (MR_READ_REQUEST, MR_READ_RESPONSE, MR_CMP_SWAP, MR_FETCH_ADD, MR_ATOMIC_RESPONSE,
               MR_ACK_COALESCED):
        c.true(op in kinds, f"capture has no {MR_OPCODES[op]} frame")
    stats.update(check_read_atomic_answers(c, side, frames))
    for k in ("retransmissions", "padded", "dropped", "read_answer_resent",
              "atomic_answer_resent", "empty_read"):
        c.true(stats[k] > 0, f"capture has no frame with {k}")
    c.finish(f"{n} frames, opcodes {sorted(MR_OPCODES[o] for o in kinds)}, {stats}")


def payload_of(fr, s):
    end = HDRS + s["length"] - ICRC - s["pad"]
    return bytes(fr[end - s["payload_len"]:end])


def check_read_atomic_answers(c, side, frames):
    """Requests and answers of metaroce-read.pcap (sidecar side, frames as sent). Returns the
    counts of resent answers and empty READs."""
    # One connection: a request is known by its addresses, stream and message (the BTH's
    # destination QPs of a request and of its answer are the two ends' QPNs).
    requests = {}  # (requester IP, responder IP, stream, message) -> (frame, sidecar)
    answers = {}  # the same key -> [(frame, sidecar, payload)] of its answer packets
    for i, (s, fr) in enumerate(zip(side, frames), start=1):
        op = s.get("opcode")
        w = f"frame {i} {s.get('opcode_name')}"
        if op in (MR_READ_REQUEST, MR_CMP_SWAP, MR_FETCH_ADD):
            # A one-packet message of its stream: offset 0, no payload.
            c.eq(f"{w} MDH offset of a request", s["offset"], 0)
            c.eq(f"{w} payload of a request", s["payload_len"], 0)
            if op in MR_ATOMICS:
                c.eq(f"{w} AtomicETH VA 8-byte aligned", s["va"] % 8, 0)
            if op == MR_FETCH_ADD:
                c.eq(f"{w} AtomicETH Compare of a Fetch&Add", s["compare"], 0)
            requests.setdefault((s["ip_src"], s["ip_dst"], s["stream"], s["msg_seq"]), (i, s))
        elif op in (MR_READ_RESPONSE, MR_ATOMIC_RESPONSE):
            key = (s["ip_dst"], s["ip_src"], s["stream"], s["msg_seq"])
            req = requests.get(key)
            c.true(req is not None, f"{w}: answers no earlier request (stream {s['stream']}, "
                   f"message {s['msg_seq']}) of the other side")
            if req is None:
                continue
            want = (MR_READ_REQUEST,) if op == MR_READ_RESPONSE else tuple(MR_ATOMICS)
            c.true(req[1]["opcode"] in want, f"{w}: answers frame {req[0]}, a "
                   f"{req[1]['opcode_name']}")
            if op == MR_READ_RESPONSE and req[1]["opcode"] == MR_READ_REQUEST:
                c.true(s["offset"] + s["payload_len"] <= req[1]["dma_len"],
                       f"{w}: bytes {s['offset']}..{s['offset'] + s['payload_len']} beyond the "
                       f"READ's DMA length {req[1]['dma_len']} (frame {req[0]})")
            elif op == MR_ATOMIC_RESPONSE:
                c.eq(f"{w} MDH offset of an atomic answer", s["offset"], 0)
            answers.setdefault(key, []).append((i, s, payload_of(fr, s)))
    counts = {"read_answer_resent": 0, "atomic_answer_resent": 0, "empty_read": 0}
    for key, (i, req) in requests.items():
        got = answers.get(key, [])
        w = f"{req['opcode_name']} of frame {i}"
        if req["opcode"] == MR_READ_REQUEST:
            # The distinct answer packets cover the READ exactly once, in MTU-sized pieces.
            pieces = sorted({(s["offset"], s["payload_len"]) for _, s, _ in got})
            at = 0
            for off, length in pieces:
                c.eq(f"{w}: next answer packet's offset", off, at)
                at = off + length
            c.eq(f"{w}: bytes answered", at, req["dma_len"])
            c.true(bool(pieces), f"{w}: no answer")
            counts["empty_read"] += req["dma_len"] == 0 and pieces == [(0, 0)]
        else:
            c.true(bool(got), f"{w}: no answer")
        # Every answer packet sent more than once carries the same bytes (READ: the same
        # payload at the same offset; atomic: the original value it saved), and the last
        # copy of each got through.
        copies = {}
        for j, s, pb in got:
            copies.setdefault(s["offset"], []).append((j, s, pb))
        for off, sent in copies.items():
            c.true(not sent[-1][1]["dropped"], f"{w}: answer at offset {off} only sent dropped "
                   f"(frames {[j for j, _, _ in sent]})")
            first_j, first, first_pb = sent[0]
            for j, s, pb in sent[1:]:
                c.eq(f"{w}: frame {j} resends frame {first_j}: payload", pb, first_pb)
                c.eq(f"{w}: frame {j} resends frame {first_j}: original", s.get("original"),
                     first.get("original"))
            if len(sent) > 1 and first["dropped"]:
                counts["read_answer_resent" if req["opcode"] == MR_READ_REQUEST
                       else "atomic_answer_resent"] += 1
    # The generator drops exactly the first MR_READ_RESPONSE and the first MR_ATOMIC_RESPONSE.
    for op in (MR_READ_RESPONSE, MR_ATOMIC_RESPONSE):
        first = next((i for i, s in enumerate(side, start=1) if s.get("opcode") == op), None)
        c.true(first is not None and side[first - 1]["dropped"],
               f"the first {MR_OPCODES[op]} (frame {first}) was not dropped")
    dropped = [(i, s["opcode_name"]) for i, s in enumerate(side, start=1) if s["dropped"]]
    c.true(sorted(name for _, name in dropped) == ["MR_ATOMIC_RESPONSE", "MR_READ_RESPONSE"],
           f"dropped frames {dropped}: want one MR_READ_RESPONSE and one MR_ATOMIC_RESPONSE")
    return counts


def check_rocev2(args, ts, lua=None, stem="rocev2"):
    name = stem + ("-chained" if lua else "")
    c = Checker(name)
    pcap = os.path.join(args.workdir, stem + ".pcap")
    side = load_sidecar(args.workdir, stem)["frames"]
    frames = read_pcap(pcap)
    pkts = ts.pdml(pcap, lua)
    c.eq("frame count", len(pkts), len(side))
    counts = {}
    for i, (pkt, s, fr) in enumerate(zip(pkts, side, frames), start=1):
        w = f"frame {i}"
        check_clean(c, i, pkt)
        if not lua:
            c.true(not any(k.startswith("metaroce") or k.startswith("roce_icrc") for k in pkt),
                   f"{w}: MetaRoCE Lua dissector is loaded in the run without it "
                   "(personal/global plugin?)")
            c.true(not any(k.startswith("_ws.expert") for k in pkt),
                   f"{w}: expert info {shows(pkt, '_ws.expert.message')}")
        else:
            c.true("metaroce" not in pkt, f"{w}: RoCEv2 frame taken by the MetaRoCE dissector")
            c.eq(f"{w} roce_icrc.status", num(pkt, "roce_icrc.status"), 1)
            c.eq(f"{w} roce_icrc.icrc", num(pkt, "roce_icrc.icrc"), s["icrc"])
        c.true("infiniband" in pkt, f"{w}: not decoded by Wireshark's InfiniBand dissector")
        c.true("infiniband.mad" not in pkt,
               f"{w}: payload decoded as a MAD (destination QP {s['dest_qp']}: QP 0/1 are "
               "the SMI/GSI)")
        op = s["opcode"]
        counts[s["opcode_name"]] = counts.get(s["opcode_name"], 0) + 1
        c.eq(f"{w} parse status (engine)", s["parse"], "OK")
        c.eq(f"{w} infiniband.bth.opcode", num(pkt, "infiniband.bth.opcode"), op)
        opnames = [el.get("showname") for el in pkt.get("infiniband.bth.opcode", [])]
        if op == ROCE_CNP:
            # Wireshark 4.0 has no name for the RoCEv2 CNP opcode (0x81).
            c.true(opnames and ("Unknown (129)" in opnames[0] or "CNP" in opnames[0].upper()),
                   f"{w}: CNP opcode shown as {opnames}")
        else:
            c.eq(f"{w} opcode name", opnames, [f"Opcode: {IB_OPCODE_NAMES[op]} ({op})"])
        c.eq(f"{w} infiniband.bth.psn", num(pkt, "infiniband.bth.psn"), s["psn"])
        c.eq(f"{w} infiniband.bth.destqp", num(pkt, "infiniband.bth.destqp"), s["dest_qp"])
        c.eq(f"{w} infiniband.bth.padcnt", num(pkt, "infiniband.bth.padcnt"), s["pad"])
        c.eq(f"{w} infiniband.bth.p_key", num(pkt, "infiniband.bth.p_key"), s["pkey"])
        c.eq(f"{w} infiniband.bth.a", num(pkt, "infiniband.bth.a"), s["ack_req"])
        c.eq(f"{w} infiniband.bth.se", num(pkt, "infiniband.bth.se"), s["solicited"])
        c.eq(f"{w} udp.srcport", num(pkt, "udp.srcport"), s["udp_sport"])
        if op in RETH_OPCODES:
            c.eq(f"{w} infiniband.reth.va", num(pkt, "infiniband.reth.va"), s["va"])
            c.eq(f"{w} infiniband.reth.r_key", num(pkt, "infiniband.reth.r_key"), s["rkey"])
            c.eq(f"{w} infiniband.reth.dmalen", num(pkt, "infiniband.reth.dmalen"), s["dma_len"])
        else:
            c.true("infiniband.reth.dmalen" not in pkt, f"{w}: unexpected RETH")
        if op in IMM_OPCODES:
            # Wireshark 4.0 names both the IMMDT header item and its value infiniband.immdt.
            imm = shows(pkt, "infiniband.immdt")
            c.eq(f"{w} infiniband.immdt",
                 int(imm[-1].replace(":", ""), 16) if imm else None, s["imm"])
        if op in AETH_OPCODES:
            c.eq(f"{w} infiniband.aeth.syndrome", num(pkt, "infiniband.aeth.syndrome"),
                 s["aeth_syndrome"])
            c.eq(f"{w} infiniband.aeth.msn", num(pkt, "infiniband.aeth.msn"), s["msn"])
        else:
            c.true("infiniband.aeth" not in pkt, f"{w}: unexpected AETH")
        if op in ATOMIC_OPCODES:
            # Wireshark 4.0 shows the AtomicETH's VA and R_Key under the RETH's field names.
            c.eq(f"{w} AtomicETH va", num(pkt, "infiniband.reth.va"), s["va"])
            c.eq(f"{w} AtomicETH r_key", num(pkt, "infiniband.reth.r_key"), s["rkey"])
            c.eq(f"{w} infiniband.atomiceth.swapdt", num(pkt, "infiniband.atomiceth.swapdt"),
                 s["swap_add"])
            c.eq(f"{w} infiniband.atomiceth.cmpdt", num(pkt, "infiniband.atomiceth.cmpdt"),
                 s["compare"])
        if op == ATOMIC_ACK:
            c.eq(f"{w} infiniband.atomicacketh.origremdt",
                 num(pkt, "infiniband.atomicacketh.origremdt"), s["original"])
        if op != ROCE_CNP:
            # Wireshark shows the four trailer bytes as a big-endian number; the ICRC is
            # stored least significant byte first, so the display is the byte-swapped CRC.
            trailer = int.from_bytes(fr[-4:], "big")
            c.eq(f"{w} infiniband.invariant.crc", num(pkt, "infiniband.invariant.crc"), trailer)
            # Payload: Wireshark hands payload + pad to the data dissector (it does not
            # strip BTH PadCnt).
            if s["payload_len"] > 0:
                c.eq(f"{w} data.len", num(pkt, "data.len"), s["payload_len"] + s["pad"])
        computed, stored = icrc_of_frame(fr)
        c.eq(f"{w} engine ICRC check", s["icrc_ok"], True)
        c.eq(f"{w} stored ICRC", stored, s["icrc"])
        c.eq(f"{w} zlib ICRC (independent)", computed, stored)
    err = ts.expert_errors(pcap, lua)
    c.true(not err, f"-z expert,error lists errors:\n{err}")
    naks = sum(1 for s in side if s.get("aeth_syndrome", 0) & 0x60)
    if stem == "rocev2":
        for needed in ("RC_WRITE_FIRST", "RC_WRITE_MIDDLE", "RC_WRITE_LAST", "RC_ACKNOWLEDGE",
                       "RC_SEND_FIRST", "RC_SEND_LAST", "RC_WRITE_LAST_IMM", "RC_SEND_ONLY_IMM"):
            c.true(needed in counts, f"capture has no {needed} frame")
        c.true(naks > 0, "capture has no NAK")
    else:
        check_read_atomic_scenario(c, side, counts)
    c.finish(f"{len(pkts)} frames, {naks} NAKs, opcodes {counts}")


def check_read_atomic_scenario(c, side, counts):
    """rocev2-read.pcap must show every READ/atomic opcode, a READ asked for again from a
    missing response's PSN, and an atomic answered twice with the same saved original."""
    for needed in ("RC_READ_REQUEST", "RC_READ_RESPONSE_FIRST", "RC_READ_RESPONSE_MIDDLE",
                   "RC_READ_RESPONSE_LAST", "RC_READ_RESPONSE_ONLY", "RC_CMP_SWAP",
                   "RC_FETCH_ADD", "RC_ATOMIC_ACKNOWLEDGE"):
        c.true(needed in counts, f"capture has no {needed} frame")
    first_read = next(s for s in side if s.get("opcode") == 0x0C)
    c.true(any(s.get("opcode") == 0x0C and s["psn"] > first_read["psn"] and
               s["va"] > first_read["va"] and s["dma_len"] < first_read["dma_len"]
               for s in side), "no READ resent from a later PSN for the rest of the message")
    originals = {}
    for s in side:
        if s.get("opcode") == ATOMIC_ACK:
            originals.setdefault(s["psn"], set()).add(s["original"])
    c.true(any(sum(1 for s in side if s.get("opcode") == ATOMIC_ACK and s["psn"] == psn) > 1
               and len(vals) == 1 for psn, vals in originals.items()),
           "no atomic answered twice with the same original (replay cache)")


def check_irn(args, ts):
    c = Checker("irn")
    pcap = os.path.join(args.workdir, "irn.pcap")
    side = load_sidecar(args.workdir, "irn")["frames"]
    frames = read_pcap(pcap)
    pkts = ts.pdml(pcap, args.lua)
    c.eq("frame count", len(pkts), len(side))
    info = info_column(ts, pcap, args.lua)
    seen = {}
    counts = {}
    stats = {"irn_frames": 0, "nacks": 0, "retransmissions": 0, "padded": 0, "dropped": 0,
             "other_frames": 0}
    for i, (pkt, s, fr) in enumerate(zip(pkts, side, frames), start=1):
        w = f"frame {i}"
        check_clean(c, i, pkt)
        c.eq(f"{w} parse status (engine)", s["parse"], "OK")
        op = s["opcode"]
        counts[s["opcode_name"]] = counts.get(s["opcode_name"], 0) + 1
        stats["dropped"] += s["dropped"]
        computed, stored = icrc_of_frame(fr)
        c.eq(f"{w} engine ICRC check", s["icrc_ok"], True)
        c.eq(f"{w} zlib ICRC", computed, s["icrc"])
        if op not in IRN_OPCODES:
            # ACKs and CNPs: standard RoCEv2, still Wireshark's InfiniBand dissector.
            stats["other_frames"] += 1
            c.true("infiniband" in pkt and "metaroce" not in pkt,
                   f"{w}: {s['opcode_name']} not decoded by Wireshark's InfiniBand dissector")
            c.eq(f"{w} infiniband.bth.psn", num(pkt, "infiniband.bth.psn"), s["psn"])
            c.eq(f"{w} roce_icrc.status", num(pkt, "roce_icrc.status"), 1)
            continue
        stats["irn_frames"] += 1
        c.eq(f"{w} opcode name (engine)", s["opcode_name"], IRN_OPCODES[op])
        c.true("metaroce" in pkt, f"{w}: {IRN_OPCODES[op]} not decoded by the Lua dissector")
        c.true("infiniband" not in pkt and "data" not in pkt,
               f"{w}: {IRN_OPCODES[op]} handed to another dissector "
               f"({[k for k in ('infiniband', 'data') if k in pkt]})")
        if "metaroce" not in pkt:
            continue
        opnames = [el.get("showname") for el in pkt.get("metaroce.opcode", [])]
        c.eq(f"{w} opcode name", opnames, [f"Opcode: {IRN_OPCODES[op]} (0x{op:02x})"])
        c.eq(f"{w} metaroce.opcode", num(pkt, "metaroce.opcode"), op)
        c.eq(f"{w} ip.src", shows(pkt, "ip.src"), [s["ip_src"]])
        c.eq(f"{w} udp.srcport", num(pkt, "udp.srcport"), s["udp_sport"])
        for f, k in (("psn", "psn"), ("dest_qp", "dest_qp"), ("pad", "pad"), ("pkey", "pkey"),
                     ("ack_req", "ack_req"), ("se", "solicited"), ("becn", "becn")):
            c.eq(f"{w} metaroce.{f}", num(pkt, "metaroce." + f), s[k])
        # Headers present exactly when the engine's opcode table says so.
        for f, k in (("va", "va"), ("rkey", "rkey"), ("dma_len", "dma_len"), ("imm", "imm"),
                     ("irh.offset", "irh_offset"), ("irh.recv_wqe_sn", "recv_wqe_sn"),
                     ("aeth.syndrome", "aeth_syndrome"), ("aeth.msn", "msn"),
                     ("ish.sack_psn", "sack_psn")):
            c.eq(f"{w} metaroce.{f}", num(pkt, "metaroce." + f), s.get(k))
        proto, text = info.get(i, ("", ""))
        c.eq(f"{w} protocol column", proto, "RoCEv2 IRN")
        if op == IRN_NACK:
            stats["nacks"] += 1
            c.eq(f"{w} AETH type (engine)", s["aeth_syndrome"] & 0x60, 0x60)
            c.eq(f"{w} metaroce.aeth.type", num(pkt, "metaroce.aeth.type"),
                 (s["aeth_syndrome"] >> 5) & 3)
            c.eq(f"{w} metaroce.aeth.value", num(pkt, "metaroce.aeth.value"),
                 s["aeth_syndrome"] & 0x1F)
            c.eq(f"{w} metaroce.irn.expected_psn", num(pkt, "metaroce.irn.expected_psn"),
                 s["psn"])
            c.eq(f"{w} metaroce.payload_len", num(pkt, "metaroce.payload_len"), 0)
            c.true(text.startswith(f"IRN NACK expected={s['psn']} sack={s['sack_psn']} "),
                   f"{w}: info column {text!r}")
            continue
        c.eq(f"{w} metaroce.payload_len", num(pkt, "metaroce.payload_len"), s["payload_len"])
        end = HDRS + s["length"] - 4 - s["pad"]
        pb = hexbytes(pkt, "metaroce.payload") if s["payload_len"] else b""
        c.eq(f"{w} payload bytes", pb, fr[end - s["payload_len"]:end])
        stats["padded"] += s["pad"] != 0
        key = (s["ip_src"], s["ip_dst"], s["dest_qp"], s["psn"])
        retx = key in seen
        seen.setdefault(key, i)
        c.eq(f"{w} metaroce.retransmission", num(pkt, "metaroce.retransmission"),
             1 if retx else None)
        c.eq(f"{w} metaroce.retransmission_of", num(pkt, "metaroce.retransmission_of"),
             seen[key] if retx else None)
        stats["retransmissions"] += retx
        want = f"{IRN_OPCODES[op].replace('_', ' ', 1)} PSN={s['psn']} off={s['irh_offset']} "
        c.true(text.startswith(want) and f" len={s['payload_len']}" in text and
               text.endswith(" [retransmission]") == retx,
               f"{w}: info column {text!r}, want {want!r}... len={s['payload_len']}")
        # ICRC: stored value and the Lua's verdict.
        c.eq(f"{w} metaroce.icrc", num(pkt, "metaroce.icrc"), s["icrc"])
        c.eq(f"{w} metaroce.icrc.computed", num(pkt, "metaroce.icrc.computed"), s["icrc"])
        c.eq(f"{w} metaroce.icrc.status", num(pkt, "metaroce.icrc.status"), 1)
    # The NACK's ICRC too (skipped above by `continue`): checked here for every NACK.
    for i, (pkt, s) in enumerate(zip(pkts, side), start=1):
        if s.get("opcode") == IRN_NACK and "metaroce" in pkt:
            c.eq(f"frame {i} metaroce.icrc.status", num(pkt, "metaroce.icrc.status"), 1)
            c.eq(f"frame {i} metaroce.icrc", num(pkt, "metaroce.icrc"), s["icrc"])
    # The scenario must exercise what the dissector decodes.
    for needed in ("IRN_WRITE_FIRST", "IRN_WRITE_MIDDLE", "IRN_WRITE_LAST", "IRN_WRITE_LAST_IMM",
                   "IRN_SEND_FIRST", "IRN_SEND_LAST", "IRN_SEND_ONLY_IMM", "IRN_NACK",
                   "RC_ACKNOWLEDGE"):
        c.true(needed in counts, f"capture has no {needed} frame")
    c.true("RC_WRITE_FIRST" not in counts and "RC_SEND_FIRST" not in counts,
           "IRN capture has go-back-N data opcodes")
    for k, v in stats.items():
        c.true(v > 0, f"capture has no {k}")
    c.finish(f"{len(pkts)} frames, opcodes {counts}, {stats}")


def check_negative(args, ts):
    c = Checker("negative")
    tmp = os.path.join(args.workdir, "negative")
    os.makedirs(tmp, exist_ok=True)
    for stem in ("metaroce", "rocev2", "irn"):
        src = os.path.join(args.workdir, stem + ".pcap")
        frames = [bytearray(f) for f in read_pcap(src)]
        # Frame 1: flip a payload bit -> bad. Frame 2: rewrite TTL and ECN (masked by the
        # ICRC) and fix the IPv4 checksum -> still good.
        frames[0][len(frames[0]) - 6] ^= 0x01
        ip = frames[1][ETH:ETH + IP4]
        ip[8] = 17
        ip[1] = (ip[1] & 0xFC) | 0x03
        ip[10:12] = b"\x00\x00"
        ip[10:12] = struct.pack(">H", ipv4_checksum(ip))
        frames[1][ETH:ETH + IP4] = ip
        bad = os.path.join(tmp, stem + "-corrupt.pcap")
        write_pcap(bad, frames, src)
        c.true(icrc_of_frame(frames[0])[0] != icrc_of_frame(frames[0])[1],
               f"{stem}: zlib check misses the flipped bit")
        c.true(icrc_of_frame(frames[1])[0] == icrc_of_frame(frames[1])[1],
               f"{stem}: zlib check does not mask TTL/ECN")
        pkts = ts.pdml(bad, args.lua)
        # IRN frames 1 and 2 are IRN data packets, decoded (and ICRC-checked) by the Lua.
        field = "roce_icrc.status" if stem == "rocev2" else "metaroce.icrc.status"
        c.eq(f"{stem} frame 1 {field}", num(pkts[0], field), 0)
        c.true(SEVERITY_ERROR in nums(pkts[0], "_ws.expert.severity"),
               f"{stem}: bad ICRC raises no expert error")
        c.eq(f"{stem} frame 2 {field} (TTL/ECN rewritten)", num(pkts[1], field), 1)
    check_negative_record_count(c, args, ts, tmp)
    c.finish("bad ICRCs flagged, masked fields ignored, bad RecordCounts flagged")


def check_negative_record_count(c, args, ts, tmp):
    """Copies of the first coalesced ACK with one record more and one record fewer in
    RecordCount than its payload holds (ICRC recomputed, so only the count is wrong): both are
    malformed, with the expert error metaroce.cack.bad_record_count. The unchanged frame is
    not."""
    src = os.path.join(args.workdir, "metaroce.pcap")
    frames = read_pcap(src)
    count_at = HDRS + BTH + 4  # the MCH's RecordCount
    cack = next((bytearray(f) for f in frames if f[HDRS] == MR_ACK_COALESCED), None)
    c.true(cack is not None, "metaroce: no MR_ACK_COALESCED frame to corrupt")
    if cack is None:
        return
    count = cack[count_at]
    edited = [bytes(cack)]
    for delta in (1, -1):
        f = bytearray(cack)
        f[count_at] = (count + delta) & 0xFF
        refresh_icrc(f)
        edited.append(bytes(f))
    bad = os.path.join(tmp, "metaroce-record-count.pcap")
    write_pcap(bad, edited, src)
    pkts = ts.pdml(bad, args.lua)
    for pkt, what in zip(pkts, ("unchanged", f"RecordCount {count + 1}",
                                f"RecordCount {count - 1}")):
        w = f"coalesced ACK with {count} records, {what}"
        c.eq(f"{w}: metaroce.icrc.status", num(pkt, "metaroce.icrc.status"), 1)
        flagged = "metaroce.cack.bad_record_count" in pkt
        c.eq(f"{w}: metaroce.cack.bad_record_count", flagged, what != "unchanged")
        c.eq(f"{w}: expert error", SEVERITY_ERROR in nums(pkt, "_ws.expert.severity"),
             what != "unchanged")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", required=True,
                    choices=["generate", "metaroce", "rocev2", "rocev2-chained", "rocev2-read",
                             "rocev2-read-chained", "metaroce-read", "irn", "negative",
                             "all"])
    ap.add_argument("--tshark", default="")
    ap.add_argument("--generator", default="")
    ap.add_argument("--lua", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    tshark = args.tshark or shutil.which("tshark")
    if not tshark or not os.path.exists(tshark):
        print("SKIP: tshark not found (install Debian's tshark package to run the Wireshark "
              "tests)")
        return SKIP
    args.lua = os.path.abspath(args.lua)
    ts = Tshark(tshark, args.workdir)
    checks = {
        "generate": lambda: check_generate(args, ts),
        "metaroce": lambda: check_metaroce(args, ts),
        "rocev2": lambda: check_rocev2(args, ts),
        "rocev2-chained": lambda: check_rocev2(args, ts, args.lua),
        "rocev2-read": lambda: check_rocev2(args, ts, stem="rocev2-read"),
        "rocev2-read-chained": lambda: check_rocev2(args, ts, args.lua, "rocev2-read"),
        "metaroce-read": lambda: check_metaroce_read(args, ts),
        "irn": lambda: check_irn(args, ts),
        "negative": lambda: check_negative(args, ts),
    }
    todo = list(checks) if args.check == "all" else [args.check]
    try:
        for name in todo:
            checks[name]()
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
