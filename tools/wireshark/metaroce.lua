-- metaroce.lua: Wireshark dissector for the MetaRoCE-ns3 wire model.
--
-- Copyright (c) 2026 MetaRoCE-ns3 authors
-- SPDX-License-Identifier: GPL-2.0-only
--
-- MetaRoCE datagrams are RoCEv2 datagrams (UDP port 4791) whose BTH opcode is in the
-- manufacturer-specific range 0xC0-0xCD. This script takes over UDP port 4791 and chains to
-- Wireshark's own RoCEv2 dissector ("infiniband") for every other opcode, so plain RoCEv2
-- traffic decodes exactly as before. For those frames it adds a small "RoCEv2 ICRC" tree
-- (roce_icrc.*), because Wireshark 4.0 does not verify the ICRC itself.
-- The RoCEv2 baseline's RDMA READ and atomics (0x0C-0x10, 0x12-0x14) are standard RC opcodes
-- and go to Wireshark's dissector too (tests/wireshark: wireshark-rocev2-read-chained).
--
-- It also decodes the RoCEv2 baseline's IRN recovery mode itself (opcodes 0xE0-0xEB =
-- 0xE0 | RC data opcode, with an IRH; 0xF1 = IRN NACK with AETH + ISH), which Wireshark's
-- InfiniBand dissector does not know.
--
-- Layouts: contrib/metaroce/engine/metaroce-wire.h (BTH, RETH, MDH, RSH, MAH, MCH and its
-- ACK records, MNH, IRH, ISH) and metaroce-icrc.h (ICRC). Usage and field list: docs/wireshark.md.
--
--   tshark -X lua_script:tools/wireshark/metaroce.lua -r capture.pcap -Y metaroce

local bit = bit32 or bit

local ROCE_PORT = 4791
local BTH_SIZE, MDH_SIZE, RETH_SIZE, RSH_SIZE, IMM_SIZE, MAH_SIZE, MNH_SIZE = 12, 12, 16, 8, 4, 48, 16
local MCH_SIZE, RECORD_SIZE = 8, 16 -- coalesced ACK header; one ACK record without its bitmap
local ICRC_SIZE = 4
local AETH_SIZE, IRH_SIZE, ISH_SIZE = 4, 8, 4
local SACK_BITS = 256
local SACK_BYTES = SACK_BITS / 8
local FLAG_ECE, FLAG_PROBE_REPLY, FLAG_DUPLICATE, FLAG_SACK = 0x01, 0x02, 0x04, 0x08
local FLAG_REPEAT = 0x10 -- coalesced ACK records only: a repeat of an earlier ACK's record
local DELAY_UNIT_NS = 8 -- AckDelay unit of an ACK record
local PSN_MASK = 0xFFFFFF

-- Header bits, in wire order (as HeaderBit in metaroce-wire.h).
local H_MDH, H_RETH, H_RSH, H_IMM, H_MAH, H_MNH, H_MCH = 1, 2, 4, 8, 32, 64, 1024
local H_ATOMIC_ETH, H_ATOMIC_ACK_ETH = 2048, 4096
local ATOMIC_ETH_SIZE, ATOMIC_ACK_ETH_SIZE = 28, 8

-- The opcode table (metaroce-wire.cc): name, headers after the BTH, may carry payload
-- (records: the payload is a list of ACK records).
local OPCODES = {
    [0xC0] = { name = "MR_WRITE", headers = H_MDH + H_RETH, payload = true },
    [0xC1] = { name = "MR_WRITE_IMM", headers = H_MDH + H_RETH + H_RSH + H_IMM, payload = true },
    [0xC2] = { name = "MR_SEND", headers = H_MDH + H_RSH, payload = true },
    [0xC3] = { name = "MR_SEND_IMM", headers = H_MDH + H_RSH + H_IMM, payload = true },
    [0xC4] = { name = "MR_ACK", headers = H_MAH, payload = false },
    [0xC5] = { name = "MR_NAK", headers = H_MNH, payload = false },
    [0xC6] = { name = "MR_PROBE", headers = H_MDH, payload = false },
    [0xC7] = { name = "MR_NOP", headers = H_MDH, payload = false },
    [0xC8] = { name = "MR_ACK_COALESCED", headers = H_MCH, payload = true, records = true },
    [0xC9] = { name = "MR_READ_REQUEST", headers = H_MDH + H_RETH, payload = false },
    [0xCA] = { name = "MR_READ_RESPONSE", headers = H_MDH, payload = true },
    [0xCB] = { name = "MR_CMP_SWAP", headers = H_MDH + H_ATOMIC_ETH, payload = false },
    [0xCC] = { name = "MR_FETCH_ADD", headers = H_MDH + H_ATOMIC_ETH, payload = false },
    [0xCD] = { name = "MR_ATOMIC_RESPONSE", headers = H_MDH + H_ATOMIC_ACK_ETH, payload = false },
}

-- IRN mode of the RoCEv2 baseline (metaroce-wire.cc, OpcodeTable::Irn): IRN_x = 0xE0 | RC_x
-- with the RC opcode's headers plus an IRH, and a RETH on every WRITE packet; IRN_NACK = 0xF1.
local IRN_BASE, IRN_NACK = 0xE0, 0xF1
local IRN_OPCODES = {
    [0xE0] = { name = "SEND_FIRST", reth = false, imm = false },
    [0xE1] = { name = "SEND_MIDDLE", reth = false, imm = false },
    [0xE2] = { name = "SEND_LAST", reth = false, imm = false },
    [0xE3] = { name = "SEND_LAST_IMM", reth = false, imm = true },
    [0xE4] = { name = "SEND_ONLY", reth = false, imm = false },
    [0xE5] = { name = "SEND_ONLY_IMM", reth = false, imm = true },
    [0xE6] = { name = "WRITE_FIRST", reth = true, imm = false },
    [0xE7] = { name = "WRITE_MIDDLE", reth = true, imm = false },
    [0xE8] = { name = "WRITE_LAST", reth = true, imm = false },
    [0xE9] = { name = "WRITE_LAST_IMM", reth = true, imm = true },
    [0xEA] = { name = "WRITE_ONLY", reth = true, imm = false },
    [0xEB] = { name = "WRITE_ONLY_IMM", reth = true, imm = true },
    [IRN_NACK] = { name = "NACK", nack = true },
}

local opcode_names = {}
for op, row in pairs(OPCODES) do
    opcode_names[op] = row.name
end
for op, row in pairs(IRN_OPCODES) do
    opcode_names[op] = "IRN_" .. row.name
end

-- AETH syndrome types (bits 6-5) and NAK codes (InfiniBand spec).
local aeth_types = { [0] = "ACK", [1] = "RNR NAK", [2] = "Reserved", [3] = "NAK" }
local aeth_nak_codes = {
    [0] = "PSN Sequence Error",
    [1] = "Invalid Request",
    [2] = "Remote Access Error",
    [3] = "Remote Operational Error",
    [4] = "Invalid RD Request",
}

local nak_syndromes = {
    [1] = "RNR (no receive posted)",
    [2] = "Remote access error",
    [3] = "Invalid request",
    [4] = "Remote operation error",
}

-- Checksum status values as Wireshark's own dissectors use them (proto_checksum_enum_e).
local CK_BAD, CK_GOOD, CK_UNVERIFIED = 0, 1, 2
local checksum_status = { [CK_BAD] = "Bad", [CK_GOOD] = "Good", [CK_UNVERIFIED] = "Unverified" }

local metaroce = Proto("metaroce", "MetaRoCE")
local roce_icrc = Proto("roce_icrc", "RoCEv2 ICRC")

-- The fields of one path's receive state: the MAH (prefix "metaroce.ack") and each record of a
-- coalesced ACK (prefix "metaroce.cack") share the first 12 bytes and the SACK bitmap.
local function path_state_fields(prefix)
    return {
        path_id = ProtoField.uint8(prefix .. ".path_id", "Path Id", base.DEC),
        path_epoch = ProtoField.uint8(prefix .. ".path_epoch", "Path Epoch", base.DEC),
        flags = ProtoField.uint8(prefix .. ".flags", "Flags", base.HEX),
        ece = ProtoField.bool(prefix .. ".ece", "ECN Echo (CE seen)", 8, nil, FLAG_ECE),
        probe_reply = ProtoField.bool(prefix .. ".probe_reply", "Probe Reply", 8, nil,
            FLAG_PROBE_REPLY),
        duplicate = ProtoField.bool(prefix .. ".duplicate", "Duplicate", 8, nil, FLAG_DUPLICATE),
        ce_count = ProtoField.uint8(prefix .. ".ce_count", "CE Count", base.DEC),
        cum_psn = ProtoField.uint24(prefix .. ".cum_psn", "Cumulative PSN (next expected)",
            base.DEC),
        trigger_psn = ProtoField.uint24(prefix .. ".trigger_psn", "Trigger PSN", base.DEC),
        sack = ProtoField.bytes(prefix .. ".sack", "SACK Bitmap"),
        sack_count = ProtoField.uint16(prefix .. ".sack_count", "SACKed PSNs", base.DEC),
        sacked_psn = ProtoField.uint24(prefix .. ".sacked_psn", "SACKed PSN", base.DEC),
        sack_list = ProtoField.string(prefix .. ".sack_list", "SACKed PSN list"),
    }
end
local AF = path_state_fields("metaroce.ack")
local CF = path_state_fields("metaroce.cack")
CF.has_sack = ProtoField.bool("metaroce.cack.has_sack", "SACK bitmap follows", 8, nil, FLAG_SACK)
CF.repeated = ProtoField.bool("metaroce.cack.repeat", "Repeated record (ackRepeat)", 8, nil,
    FLAG_REPEAT)
CF.ack_delay = ProtoField.uint16("metaroce.cack.ack_delay", "AckDelay (units of 8 ns)", base.DEC)
CF.ack_delay_ns = ProtoField.uint32("metaroce.cack.ack_delay_ns", "AckDelay (ns)", base.DEC)

local F = {
    -- BTH
    bth = ProtoField.bytes("metaroce.bth", "Base Transport Header"),
    opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX, opcode_names),
    se = ProtoField.bool("metaroce.se", "Solicited Event", 8, nil, 0x80),
    migreq = ProtoField.bool("metaroce.migreq", "MigReq", 8, nil, 0x40),
    pad = ProtoField.uint8("metaroce.pad", "Pad Count", base.DEC, nil, 0x30),
    tver = ProtoField.uint8("metaroce.tver", "Header Version", base.DEC, nil, 0x0F),
    pkey = ProtoField.uint16("metaroce.pkey", "Partition Key", base.HEX),
    fecn = ProtoField.bool("metaroce.fecn", "FECN", 8, nil, 0x80),
    becn = ProtoField.bool("metaroce.becn", "BECN", 8, nil, 0x40),
    dest_qp = ProtoField.uint24("metaroce.dest_qp", "Destination QP", base.HEX),
    ack_req = ProtoField.bool("metaroce.ack_req", "Acknowledge Request", 8, nil, 0x80),
    psn = ProtoField.uint24("metaroce.psn", "Packet Sequence Number (per path)", base.DEC),
    -- MDH
    mdh = ProtoField.bytes("metaroce.mdh", "MetaRoCE Data Header"),
    path_id = ProtoField.uint8("metaroce.path_id", "Path Id", base.DEC),
    path_epoch = ProtoField.uint8("metaroce.path_epoch", "Path Epoch", base.DEC),
    stream = ProtoField.uint16("metaroce.stream", "Stream Id", base.DEC),
    msg_seq = ProtoField.uint32("metaroce.msg_seq", "Message Sequence", base.DEC),
    offset = ProtoField.uint32("metaroce.offset", "Offset", base.DEC),
    -- RETH
    reth = ProtoField.bytes("metaroce.reth", "RDMA Extended Transport Header"),
    va = ProtoField.uint64("metaroce.va", "Virtual Address", base.HEX),
    rkey = ProtoField.uint32("metaroce.rkey", "Remote Key", base.HEX),
    dma_len = ProtoField.uint32("metaroce.dma_len", "DMA Length", base.DEC),
    -- RSH
    atomic_eth = ProtoField.bytes("metaroce.atomic_eth", "Atomic Extended Transport Header"),
    atomic_va = ProtoField.uint64("metaroce.atomic.va", "Virtual Address", base.HEX),
    atomic_rkey = ProtoField.uint32("metaroce.atomic.rkey", "Remote Key", base.HEX),
    atomic_swap_add = ProtoField.uint64("metaroce.atomic.swap_add", "Swap (or Add) Data", base.HEX),
    atomic_compare = ProtoField.uint64("metaroce.atomic.compare", "Compare Data", base.HEX),
    atomic_original = ProtoField.uint64("metaroce.atomic.original", "Original Remote Data",
        base.HEX),
    rsh = ProtoField.bytes("metaroce.rsh", "MetaRoCE Receive Slot Header"),
    recv_slot = ProtoField.uint32("metaroce.recv_slot", "Receive Slot", base.DEC),
    msg_len = ProtoField.uint32("metaroce.msg_len", "Message Length", base.DEC),
    -- ImmDt
    imm = ProtoField.uint32("metaroce.imm", "Immediate Data", base.HEX),
    -- MAH (its path-state fields: AF)
    mah = ProtoField.bytes("metaroce.ack", "MetaRoCE ACK Header"),
    ack_rate_hint = ProtoField.uint32("metaroce.ack.rate_hint_mbps", "Rate Hint (Mb/s)", base.DEC),
    -- MCH and the ACK records of MR_ACK_COALESCED (each record's fields: CF)
    mch = ProtoField.bytes("metaroce.cack", "MetaRoCE Coalesced ACK Header"),
    cack_rate_hint = ProtoField.uint32("metaroce.cack.rate_hint_mbps", "Rate Hint (Mb/s)",
        base.DEC),
    cack_record_count = ProtoField.uint8("metaroce.cack.record_count", "Record Count", base.DEC),
    cack_record = ProtoField.bytes("metaroce.cack.record", "ACK Record"),
    -- MNH
    mnh = ProtoField.bytes("metaroce.nak", "MetaRoCE NAK Header"),
    nak_stream = ProtoField.uint16("metaroce.nak.stream", "Stream Id", base.DEC),
    nak_syndrome = ProtoField.uint8("metaroce.nak.syndrome", "Syndrome", base.DEC, nak_syndromes),
    nak_path_id = ProtoField.uint8("metaroce.nak.path_id", "Path Id", base.DEC),
    nak_msg_seq = ProtoField.uint32("metaroce.nak.msg_seq", "Message Sequence", base.DEC),
    nak_offset = ProtoField.uint32("metaroce.nak.offset", "Offset", base.DEC),
    nak_path_epoch = ProtoField.uint8("metaroce.nak.path_epoch", "Path Epoch", base.DEC),
    nak_psn = ProtoField.uint24("metaroce.nak.psn", "Rejected PSN", base.DEC),
    -- IRN (RoCEv2 baseline, rocev2.recovery = "irn")
    irh = ProtoField.bytes("metaroce.irh", "IRN Request Header"),
    irh_offset = ProtoField.uint32("metaroce.irh.offset", "Offset in message", base.DEC),
    irh_recv_wqe_sn = ProtoField.uint32("metaroce.irh.recv_wqe_sn", "Receive WQE Sequence Number",
        base.DEC),
    aeth = ProtoField.bytes("metaroce.aeth", "ACK Extended Transport Header"),
    aeth_syndrome = ProtoField.uint8("metaroce.aeth.syndrome", "Syndrome", base.HEX),
    aeth_type = ProtoField.uint8("metaroce.aeth.type", "Syndrome Type", base.DEC, aeth_types, 0x60),
    aeth_value = ProtoField.uint8("metaroce.aeth.value", "Syndrome Value", base.DEC, nil, 0x1F),
    aeth_msn = ProtoField.uint24("metaroce.aeth.msn", "Message Sequence Number", base.DEC),
    ish = ProtoField.bytes("metaroce.ish", "IRN SACK Header"),
    ish_reserved = ProtoField.uint8("metaroce.ish.reserved", "Reserved", base.HEX),
    ish_sack_psn = ProtoField.uint24("metaroce.ish.sack_psn", "SACK PSN (received out of order)",
        base.DEC),
    irn_expected_psn = ProtoField.uint24("metaroce.irn.expected_psn",
        "Expected PSN (cumulative acknowledgement)", base.DEC),
    -- Payload, pad, ICRC
    payload = ProtoField.bytes("metaroce.payload", "Payload"),
    payload_len = ProtoField.uint32("metaroce.payload_len", "Payload Length", base.DEC),
    pad_bytes = ProtoField.bytes("metaroce.pad_bytes", "Pad"),
    retransmission = ProtoField.bool("metaroce.retransmission", "Retransmission"),
    retransmission_of = ProtoField.framenum("metaroce.retransmission_of", "First sent in frame"),
    icrc = ProtoField.uint32("metaroce.icrc", "ICRC", base.HEX),
    icrc_computed = ProtoField.uint32("metaroce.icrc.computed", "Computed ICRC", base.HEX),
    icrc_status = ProtoField.uint8("metaroce.icrc.status", "ICRC Status", base.DEC,
        checksum_status),
}
-- Register in a fixed (sorted) order, so field lists are the same on every load.
local function sorted_values(t)
    local keys, out = {}, {}
    for k in pairs(t) do
        keys[#keys + 1] = k
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
        out[#out + 1] = t[k]
    end
    return out
end
for k, v in pairs(AF) do
    F["ack_" .. k] = v
end
for k, v in pairs(CF) do
    F["cack_" .. k] = v
end
metaroce.fields = sorted_values(F)

local E = {
    icrc_bad = ProtoExpert.new("metaroce.icrc.bad", "Bad ICRC", expert.group.CHECKSUM,
        expert.severity.ERROR),
    icrc_unverified = ProtoExpert.new("metaroce.icrc.unverified",
        "ICRC not verified (no IPv4/IPv6 + UDP header found)", expert.group.CHECKSUM,
        expert.severity.NOTE),
    truncated = ProtoExpert.new("metaroce.truncated",
        "Datagram shorter than its headers and ICRC", expert.group.MALFORMED, expert.severity.ERROR),
    bad_version = ProtoExpert.new("metaroce.bad_version", "BTH header version is not 0",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_pad = ProtoExpert.new("metaroce.bad_pad",
        "Pad count larger than the payload, or payload not a multiple of 4 bytes",
        expert.group.MALFORMED, expert.severity.ERROR),
    unexpected_payload = ProtoExpert.new("metaroce.unexpected_payload",
        "Payload on an opcode that carries none", expert.group.MALFORMED, expert.severity.ERROR),
    nak = ProtoExpert.new("metaroce.nak.expert", "MetaRoCE NAK", expert.group.SEQUENCE,
        expert.severity.NOTE),
    retransmission = ProtoExpert.new("metaroce.retransmission.expert", "Retransmission",
        expert.group.SEQUENCE, expert.severity.NOTE),
    irn_nack = ProtoExpert.new("metaroce.irn.nack.expert", "IRN NACK (out-of-order arrival)",
        expert.group.SEQUENCE, expert.severity.NOTE),
    ece = ProtoExpert.new("metaroce.ack.ece.expert", "ACK echoes a CE mark",
        expert.group.SEQUENCE, expert.severity.CHAT),
    record_count = ProtoExpert.new("metaroce.cack.bad_record_count",
        "RecordCount disagrees with the payload length", expert.group.MALFORMED,
        expert.severity.ERROR),
}
metaroce.experts = sorted_values(E)

local RF = {
    icrc = ProtoField.uint32("roce_icrc.icrc", "ICRC (as stored, least significant byte first)",
        base.HEX),
    computed = ProtoField.uint32("roce_icrc.computed", "Computed ICRC", base.HEX),
    status = ProtoField.uint8("roce_icrc.status", "ICRC Status", base.DEC, checksum_status),
}
roce_icrc.fields = { RF.icrc, RF.computed, RF.status }
local RE_bad = ProtoExpert.new("roce_icrc.bad", "Bad RoCEv2 ICRC", expert.group.CHECKSUM,
    expert.severity.ERROR)
roce_icrc.experts = { RE_bad }

metaroce.prefs.check_icrc = Pref.bool("Verify the ICRC", true,
    "Recompute the RoCEv2 ICRC of every MetaRoCE datagram and compare it with the trailer")
metaroce.prefs.check_roce_icrc = Pref.bool("Verify the ICRC of RoCEv2 frames too", true,
    "Add a RoCEv2 ICRC check (roce_icrc.*) to frames handed to Wireshark's InfiniBand dissector")

-- Headers that enclose the UDP payload, for the ICRC.
local f_ip = Field.new("ip")
local f_ipv6 = Field.new("ipv6")
local f_udp = Field.new("udp")

---------------------------------------------------------------------------------------------
-- CRC-32 (IEEE 802.3 / zlib) and the RoCEv2 ICRC (metaroce-icrc.h)
---------------------------------------------------------------------------------------------

local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit.band(c, 1) ~= 0 then
            c = bit.bxor(0xEDB88320, bit.rshift(c, 1))
        else
            c = bit.rshift(c, 1)
        end
    end
    crc_table[i] = c
end

-- Feed the bytes of Lua string s into the CRC register crc (not inverted).
local function crc_update(crc, s)
    local band, bxor, rshift, byte = bit.band, bit.bxor, bit.rshift, string.byte
    local n = #s
    local i = 1
    while i <= n do
        local j = math.min(i + 255, n)
        local bytes = { byte(s, i, j) }
        for k = 1, #bytes do
            crc = bxor(crc_table[band(bxor(crc, bytes[k]), 0xFF)], rshift(crc, 8))
        end
        i = j + 1
    end
    return crc
end

-- Replace byte at 1-based position pos of s with 0xFF, count times.
local function mask(s, pos, count)
    return s:sub(1, pos - 1) .. string.rep("\255", count) .. s:sub(pos + count)
end

-- The innermost IPv4/IPv6 and UDP headers that end right where tvb (the UDP payload) starts.
-- Returns the IP header (masked as the ICRC requires) and UDP header (masked) as strings, or
-- nil if they cannot be found.
local function masked_headers(tvb)
    local udps = { f_udp() }
    local udp = udps[#udps]
    if udp == nil or udp.range == nil then
        return nil
    end
    local urange = udp.range
    if urange:len() < 8 then
        return nil
    end
    local ip_hdr
    for _, field in ipairs({ f_ip, f_ipv6 }) do
        local all = { field() }
        local fi = all[#all]
        if fi ~= nil and fi.range ~= nil then
            local r = fi.range
            if r:offset() + r:len() == urange:offset() then
                local raw = r:raw()
                if field == f_ip and #raw >= 20 then
                    -- IPv4: TOS (byte 1), TTL (byte 8), checksum (bytes 10-11); options ignored.
                    raw = raw:sub(1, 20)
                    raw = mask(mask(mask(raw, 2, 1), 9, 1), 11, 2)
                    ip_hdr = raw
                elseif field == f_ipv6 and #raw == 40 then
                    -- IPv6 (no extension headers): traffic class, flow label, hop limit.
                    -- Version (high nibble of byte 0) kept; the rest of bytes 0-3 all ones.
                    raw = string.char(bit.bor(raw:byte(1), 0x0F)) .. "\255\255\255" .. raw:sub(5)
                    raw = mask(raw, 8, 1)
                    ip_hdr = raw
                end
            end
        end
    end
    if ip_hdr == nil then
        return nil
    end
    -- The UDP item must be the header right before this payload.
    local udp_raw = urange:raw(0, 8)
    if urange:offset() + 8 ~= tvb:offset() then
        return nil
    end
    return ip_hdr, mask(udp_raw, 7, 2)
end

-- Compute the ICRC of datagram tvb (UDP payload) over its first len bytes (ICRC excluded).
-- Returns computed value or nil if the enclosing headers are unavailable.
local function compute_icrc(tvb, len)
    local ip_hdr, udp_hdr = masked_headers(tvb)
    if ip_hdr == nil then
        return nil
    end
    local crc = 0xFFFFFFFF
    crc = crc_update(crc, string.rep("\255", 8))
    crc = crc_update(crc, ip_hdr)
    crc = crc_update(crc, udp_hdr)
    local bth = tvb:raw(0, BTH_SIZE)
    crc = crc_update(crc, mask(bth, 5, 1))
    if len > BTH_SIZE then
        crc = crc_update(crc, tvb:raw(BTH_SIZE, len - BTH_SIZE))
    end
    return bit.bxor(crc, 0xFFFFFFFF)
end

---------------------------------------------------------------------------------------------
-- Retransmission tracking: first frame of each (addresses, QP, path, epoch, PSN)
---------------------------------------------------------------------------------------------

local first_seen = {}

function metaroce.init()
    first_seen = {}
end

local function psn_add(psn, n)
    return (psn + n) % (PSN_MASK + 1)
end

-- Compact "a-b,c" rendering of a sorted PSN list.
local function ranges(list)
    local out = {}
    local i = 1
    while i <= #list do
        local j = i
        while j < #list and list[j + 1] == psn_add(list[j], 1) do
            j = j + 1
        end
        if j == i then
            out[#out + 1] = tostring(list[i])
        else
            out[#out + 1] = list[i] .. "-" .. list[j]
        end
        i = j + 1
    end
    return table.concat(out, ",")
end

---------------------------------------------------------------------------------------------
-- The MetaRoCE dissector
---------------------------------------------------------------------------------------------

local function add_icrc(tree, tvb, icrc_off, status_field, icrc_field, computed_field, bad,
                        unverified)
    local stored = tvb(icrc_off, ICRC_SIZE):le_uint()
    local item = tree:add_le(icrc_field, tvb(icrc_off, ICRC_SIZE))
    local computed = compute_icrc(tvb, icrc_off)
    if computed == nil then
        item:add(status_field, CK_UNVERIFIED):set_generated()
        if unverified ~= nil then
            item:add_proto_expert_info(unverified)
        end
        return CK_UNVERIFIED, item
    end
    item:add(computed_field, computed):set_generated()
    if computed == stored then
        item:append_text(" [correct]")
        item:add(status_field, CK_GOOD):set_generated()
        return CK_GOOD, item
    end
    item:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
    item:add(status_field, CK_BAD):set_generated()
    item:add_proto_expert_info(bad)
    return CK_BAD, item
end

-- The BTH (12 bytes) as a subtree of tree. Returns pad count, PSN and destination QP.
local function add_bth(tree, tvb)
    local bth = tree:add(F.bth, tvb(0, BTH_SIZE))
    bth:set_text("Base Transport Header")
    bth:add(F.opcode, tvb(0, 1))
    bth:add(F.se, tvb(1, 1))
    bth:add(F.migreq, tvb(1, 1))
    bth:add(F.pad, tvb(1, 1))
    local tver_item = bth:add(F.tver, tvb(1, 1))
    bth:add(F.pkey, tvb(2, 2))
    bth:add(F.fecn, tvb(4, 1))
    bth:add(F.becn, tvb(4, 1))
    bth:add(F.dest_qp, tvb(5, 3))
    bth:add(F.ack_req, tvb(8, 1))
    bth:add(F.psn, tvb(9, 3))
    if bit.band(tvb(1, 1):uint(), 0x0F) ~= 0 then
        tver_item:add_proto_expert_info(E.bad_version)
    end
    return bit.rshift(bit.band(tvb(1, 1):uint(), 0x30), 4), tvb(9, 3):uint(), tvb(5, 3):uint()
end

-- Retransmission: key seen in an earlier frame. Adds the items; returns true if it is one.
local function mark_retransmission(tree, pinfo, key)
    local first = first_seen[key]
    if first == nil or first > pinfo.number then
        first_seen[key] = pinfo.number
        first = pinfo.number
    end
    if first < pinfo.number then
        local r = tree:add(F.retransmission, true)
        r:set_generated()
        r:add(F.retransmission_of, first):set_generated()
        r:add_proto_expert_info(E.retransmission)
        return true
    end
    return false
end

-- The ICRC trailer of a datagram this script decodes. Returns the checksum status.
local function add_own_icrc(tree, tvb)
    local len = tvb:len()
    if metaroce.prefs.check_icrc then
        return add_icrc(tree, tvb, len - ICRC_SIZE, F.icrc_status, F.icrc, F.icrc_computed,
            E.icrc_bad, E.icrc_unverified)
    end
    local item = tree:add_le(F.icrc, tvb(len - ICRC_SIZE, ICRC_SIZE))
    item:add(F.icrc_status, CK_UNVERIFIED):set_generated()
    return CK_UNVERIFIED
end

-- One path's receive state (the MAH's first 12 bytes, also the start of an ACK record) at off,
-- with the fields of FS (AF or CF), plus a hidden metaroce.path_id so that
-- `metaroce.path_id == n` finds ACKs too. Returns path id, flags, cumulative PSN, trigger PSN
-- and the flags item.
local function add_path_state(t, tvb, off, FS)
    local path_id = tvb(off, 1):uint()
    t:add(FS.path_id, tvb(off, 1))
    t:add(FS.path_epoch, tvb(off + 1, 1))
    local ft = t:add(FS.flags, tvb(off + 2, 1))
    ft:add(FS.ece, tvb(off + 2, 1))
    ft:add(FS.probe_reply, tvb(off + 2, 1))
    ft:add(FS.duplicate, tvb(off + 2, 1))
    if FS.has_sack ~= nil then
        ft:add(FS.has_sack, tvb(off + 2, 1))
    end
    if FS.repeated ~= nil then
        ft:add(FS.repeated, tvb(off + 2, 1))
    end
    t:add(FS.ce_count, tvb(off + 3, 1))
    t:add(FS.cum_psn, tvb(off + 5, 3))
    t:add(FS.trigger_psn, tvb(off + 9, 3))
    local hidden = t:add(F.path_id, path_id)
    hidden:set_generated()
    hidden:set_hidden()
    return path_id, tvb(off + 2, 1):uint(), tvb(off + 5, 3):uint(), tvb(off + 9, 3):uint(), ft
end

-- The 32-byte SACK bitmap at off of a path whose cumulative PSN is cum, with the fields of FS:
-- bit i (byte i/8, MSB first) = PSN cum + 1 + i. Returns the SACKed PSNs, in order.
local function add_sack(t, tvb, off, cum, FS)
    local sack_item = t:add(FS.sack, tvb(off, SACK_BYTES))
    local sacked = {}
    local raw = tvb:raw(off, SACK_BYTES)
    for byte_i = 0, SACK_BYTES - 1 do
        local b = raw:byte(byte_i + 1)
        if b ~= 0 then
            for bit_i = 0, 7 do
                if bit.band(b, bit.rshift(0x80, bit_i)) ~= 0 then
                    sacked[#sacked + 1] = psn_add(cum, 1 + byte_i * 8 + bit_i)
                end
            end
        end
    end
    sack_item:add(FS.sack_count, #sacked):set_generated()
    if #sacked > 0 then
        sack_item:add(FS.sack_list, ranges(sacked)):set_generated()
    end
    for _, p in ipairs(sacked) do
        sack_item:add(FS.sacked_psn, p):set_generated()
    end
    return sacked
end

-- The 4-byte RateHint at off, as field. Returns its value.
local function add_rate_hint(t, field, tvb, off)
    local item = t:add(field, tvb(off, 4))
    local rate = tvb(off, 4):uint()
    if rate == 0xFFFFFFFF then
        item:append_text(" (no limit)")
    end
    return rate
end

-- Info column text of one path's state.
local function path_state_info(path_id, cum, trigger, sacked)
    local text = string.format("path=%d cum=%d trigger=%d", path_id, cum, trigger)
    if #sacked > 0 then
        text = text .. " sack=[" .. ranges(sacked) .. "]"
    end
    return text
end

-- Info column text of an ACK's flags (ECE, PROBE_REPLY, DUP); marks ECE on the flags item.
local function flag_info(flags, ft)
    local out = {}
    if bit.band(flags, FLAG_ECE) ~= 0 then
        out[#out + 1] = "ECE"
        ft:add_proto_expert_info(E.ece)
    end
    if bit.band(flags, FLAG_PROBE_REPLY) ~= 0 then out[#out + 1] = "PROBE_REPLY" end
    if bit.band(flags, FLAG_DUPLICATE) ~= 0 then out[#out + 1] = "DUP" end
    return table.concat(out, " ")
end

-- The ACK records of an MR_ACK_COALESCED: count records (the MCH's RecordCount, item
-- count_item) in the len payload bytes at off. Each is 16 bytes (path state, AckDelay,
-- reserved), plus the 32-byte SACK bitmap when its flags have FLAG_SACK. A count that
-- disagrees with the payload (a record cut short, or bytes after the last record) is marked
-- malformed on the RecordCount item.
local function add_ack_records(tree, tvb, off, len, count, count_item, info)
    local stop = off + len
    local n = 0
    while n < count and stop - off >= RECORD_SIZE do
        local has_sack = bit.band(tvb(off + 2, 1):uint(), FLAG_SACK) ~= 0
        local rlen = RECORD_SIZE + (has_sack and SACK_BYTES or 0)
        if stop - off < rlen then
            break
        end
        n = n + 1
        local t = tree:add(F.cack_record, tvb(off, rlen))
        local path_id, flags, cum, trigger, ft = add_path_state(t, tvb, off, CF)
        local units = tvb(off + 12, 2):uint()
        local ns = units * DELAY_UNIT_NS
        local d = t:add(CF.ack_delay, tvb(off + 12, 2))
        d:append_text(string.format(" (%d ns%s)", ns, units == 0xFFFF and ", saturated" or ""))
        t:add(CF.ack_delay_ns, ns):set_generated()
        local sacked = {}
        if has_sack then
            sacked = add_sack(t, tvb, off + RECORD_SIZE, cum, CF)
        else
            -- On every record, so that `metaroce.cack.sack_count > 0` never sees it missing.
            t:add(CF.sack_count, 0):set_generated()
        end
        local text = path_state_info(path_id, cum, trigger, sacked)
        local flag_text = flag_info(flags, ft)
        t:set_text(string.format("ACK Record %d: %s delay=%dns%s", n, text, ns,
            flag_text ~= "" and (" " .. flag_text) or ""))
        info[#info + 1] = string.format("[%s delay=%dns%s]", text, ns,
            flag_text ~= "" and (" " .. flag_text) or "")
        off = off + rlen
    end
    if n < count then
        count_item:add_proto_expert_info(E.record_count, string.format(
            "RecordCount is %d, but the payload (%d bytes) holds %d complete record(s)", count,
            len, n))
        info[#info + 1] = "[bad RecordCount]"
    elseif off < stop then
        count_item:add_proto_expert_info(E.record_count, string.format(
            "RecordCount is %d, but %d byte(s) follow the last record", count, stop - off))
        info[#info + 1] = "[bad RecordCount]"
    end
end

local function dissect_metaroce(tvb, pinfo, root)
    local len = tvb:len()
    local op = tvb(0, 1):uint()
    local row = OPCODES[op]
    pinfo.cols.protocol = "MetaRoCE"
    local tree = root:add(metaroce, tvb(), "MetaRoCE, " .. row.name)
    local info = { row.name }

    -- BTH
    local pad, psn, qp = add_bth(tree, tvb)

    -- Extension headers, in wire order.
    local need = BTH_SIZE + ICRC_SIZE
    local h = row.headers
    if bit.band(h, H_MDH) ~= 0 then need = need + MDH_SIZE end
    if bit.band(h, H_RETH) ~= 0 then need = need + RETH_SIZE end
    if bit.band(h, H_ATOMIC_ETH) ~= 0 then need = need + ATOMIC_ETH_SIZE end
    if bit.band(h, H_RSH) ~= 0 then need = need + RSH_SIZE end
    if bit.band(h, H_IMM) ~= 0 then need = need + IMM_SIZE end
    if bit.band(h, H_ATOMIC_ACK_ETH) ~= 0 then need = need + ATOMIC_ACK_ETH_SIZE end
    if bit.band(h, H_MAH) ~= 0 then need = need + MAH_SIZE end
    if bit.band(h, H_MNH) ~= 0 then need = need + MNH_SIZE end
    if bit.band(h, H_MCH) ~= 0 then need = need + MCH_SIZE end
    if len < need then
        tree:add_proto_expert_info(E.truncated)
        pinfo.cols.info = table.concat(info, " ") .. " [truncated]"
        return len
    end

    local off = BTH_SIZE
    local path_id, path_epoch
    local mch_item, mch_rate
    if bit.band(h, H_MDH) ~= 0 then
        local t = tree:add(F.mdh, tvb(off, MDH_SIZE))
        t:set_text("MetaRoCE Data Header (MDH)")
        t:add(F.path_id, tvb(off, 1))
        t:add(F.path_epoch, tvb(off + 1, 1))
        t:add(F.stream, tvb(off + 2, 2))
        t:add(F.msg_seq, tvb(off + 4, 4))
        t:add(F.offset, tvb(off + 8, 4))
        path_id = tvb(off, 1):uint()
        path_epoch = tvb(off + 1, 1):uint()
        info[#info + 1] = string.format("path=%d psn=%d stream=%d msg=%d off=%d", path_id, psn,
            tvb(off + 2, 2):uint(), tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint())
        off = off + MDH_SIZE
    end
    if bit.band(h, H_RETH) ~= 0 then
        local t = tree:add(F.reth, tvb(off, RETH_SIZE))
        t:set_text("RDMA Extended Transport Header (RETH)")
        t:add(F.va, tvb(off, 8))
        t:add(F.rkey, tvb(off + 8, 4))
        t:add(F.dma_len, tvb(off + 12, 4))
        off = off + RETH_SIZE
    end
    if bit.band(h, H_ATOMIC_ETH) ~= 0 then
        local t = tree:add(F.atomic_eth, tvb(off, ATOMIC_ETH_SIZE))
        t:set_text("Atomic Extended Transport Header (AtomicETH)")
        t:add(F.atomic_va, tvb(off, 8))
        t:add(F.atomic_rkey, tvb(off + 8, 4))
        t:add(F.atomic_swap_add, tvb(off + 12, 8))
        t:add(F.atomic_compare, tvb(off + 20, 8))
        off = off + ATOMIC_ETH_SIZE
    end
    if bit.band(h, H_RSH) ~= 0 then
        local t = tree:add(F.rsh, tvb(off, RSH_SIZE))
        t:set_text("MetaRoCE Receive Slot Header (RSH)")
        t:add(F.recv_slot, tvb(off, 4))
        t:add(F.msg_len, tvb(off + 4, 4))
        info[#info + 1] = string.format("slot=%d", tvb(off, 4):uint())
        off = off + RSH_SIZE
    end
    if bit.band(h, H_IMM) ~= 0 then
        tree:add(F.imm, tvb(off, IMM_SIZE))
        info[#info + 1] = string.format("imm=0x%08x", tvb(off, 4):uint())
        off = off + IMM_SIZE
    end
    if bit.band(h, H_ATOMIC_ACK_ETH) ~= 0 then
        local t = tree:add(F.atomic_eth, tvb(off, ATOMIC_ACK_ETH_SIZE))
        t:set_text("Atomic Acknowledge Extended Transport Header (AtomicAckETH)")
        t:add(F.atomic_original, tvb(off, 8))
        off = off + ATOMIC_ACK_ETH_SIZE
    end
    if bit.band(h, H_MAH) ~= 0 then
        local t = tree:add(F.mah, tvb(off, MAH_SIZE))
        t:set_text("MetaRoCE ACK Header (MAH)")
        local flags, cum, trigger, ft
        path_id, flags, cum, trigger, ft = add_path_state(t, tvb, off, AF)
        local rate = add_rate_hint(t, F.ack_rate_hint, tvb, off + 12)
        path_epoch = tvb(off + 1, 1):uint()
        local sacked = add_sack(t, tvb, off + 16, cum, AF)
        info[#info + 1] = path_state_info(path_id, cum, trigger, sacked)
        if rate ~= 0xFFFFFFFF then
            info[#info + 1] = string.format("rate=%dMb/s", rate)
        end
        local flag_text = flag_info(flags, ft)
        if flag_text ~= "" then
            info[#info + 1] = flag_text
        end
        off = off + MAH_SIZE
    end
    local record_count
    if bit.band(h, H_MCH) ~= 0 then
        local t = tree:add(F.mch, tvb(off, MCH_SIZE))
        t:set_text("MetaRoCE Coalesced ACK Header (MCH)")
        mch_rate = add_rate_hint(t, F.cack_rate_hint, tvb, off)
        mch_item = t:add(F.cack_record_count, tvb(off + 4, 1))
        record_count = tvb(off + 4, 1):uint()
        info[#info + 1] = string.format("records=%d", record_count)
        off = off + MCH_SIZE
    end
    if bit.band(h, H_MNH) ~= 0 then
        local t = tree:add(F.mnh, tvb(off, MNH_SIZE))
        t:set_text("MetaRoCE NAK Header (MNH)")
        t:add(F.nak_stream, tvb(off, 2))
        local syn_item = t:add(F.nak_syndrome, tvb(off + 2, 1))
        t:add(F.nak_path_id, tvb(off + 3, 1))
        t:add(F.nak_msg_seq, tvb(off + 4, 4))
        t:add(F.nak_offset, tvb(off + 8, 4))
        t:add(F.nak_path_epoch, tvb(off + 12, 1))
        t:add(F.nak_psn, tvb(off + 13, 3))
        local syn = tvb(off + 2, 1):uint()
        local hidden = t:add(F.path_id, tvb(off + 3, 1):uint())
        hidden:set_generated()
        hidden:set_hidden()
        syn_item:add_proto_expert_info(E.nak, "NAK: " .. (nak_syndromes[syn] or ("syndrome " .. syn)))
        info[#info + 1] = string.format("%s path=%d psn=%d stream=%d msg=%d off=%d",
            nak_syndromes[syn] or ("syndrome " .. syn), tvb(off + 3, 1):uint(),
            tvb(off + 13, 3):uint(), tvb(off, 2):uint(), tvb(off + 4, 4):uint(),
            tvb(off + 8, 4):uint())
        off = off + MNH_SIZE
    end

    -- Payload and pad.
    local padded = len - off - ICRC_SIZE
    local payload_len = padded - pad
    if not row.payload and padded ~= 0 then
        tree:add_proto_expert_info(E.unexpected_payload)
    elseif pad > padded or padded % 4 ~= 0 then
        tree:add_proto_expert_info(E.bad_pad)
    end
    if payload_len < 0 then payload_len = 0 end
    if row.records then
        add_ack_records(tree, tvb, off, payload_len, record_count, mch_item, info)
        if mch_rate ~= 0xFFFFFFFF then
            info[#info + 1] = string.format("rate=%dMb/s", mch_rate)
        end
    elseif payload_len > 0 then
        tree:add(F.payload, tvb(off, payload_len))
    end
    -- On every frame (0 without payload), so that a filter or a column never sees it missing.
    tree:add(F.payload_len, payload_len):set_generated()
    if padded - payload_len > 0 then
        tree:add(F.pad_bytes, tvb(off + payload_len, padded - payload_len))
    end
    if row.payload and not row.records then
        info[#info + 1] = string.format("len=%d", payload_len)
    end

    -- Retransmission: the same (addresses, QP, path, epoch, PSN) seen in an earlier frame.
    if path_id ~= nil and bit.band(h, H_MDH) ~= 0 then
        local key = table.concat({ tostring(pinfo.src), tostring(pinfo.dst), qp, path_id,
            path_epoch, psn }, "/")
        if mark_retransmission(tree, pinfo, key) then
            info[#info + 1] = "[retransmission]"
        end
    end

    -- ICRC
    if add_own_icrc(tree, tvb) == CK_BAD then
        info[#info + 1] = "[bad ICRC]"
    end

    pinfo.cols.info = table.concat(info, " ")
    return len
end


---------------------------------------------------------------------------------------------
-- The RoCEv2 baseline's IRN mode: IRN_x data packets (BTH [RETH] IRH [ImmDt] payload pad ICRC)
-- and IRN_NACK (BTH AETH ISH ICRC).
---------------------------------------------------------------------------------------------

local function dissect_irn(tvb, pinfo, root)
    local len = tvb:len()
    local op = tvb(0, 1):uint()
    local row = IRN_OPCODES[op]
    pinfo.cols.protocol = "RoCEv2 IRN"
    local tree = root:add(metaroce, tvb(), "RoCEv2 IRN, IRN_" .. row.name)
    local pad, psn, qp = add_bth(tree, tvb)
    local info = { "IRN " .. row.name }

    local need = BTH_SIZE + ICRC_SIZE
    if row.nack then
        need = need + AETH_SIZE + ISH_SIZE
    else
        need = need + IRH_SIZE
        if row.reth then need = need + RETH_SIZE end
        if row.imm then need = need + IMM_SIZE end
    end
    if len < need then
        tree:add_proto_expert_info(E.truncated)
        pinfo.cols.info = table.concat(info, " ") .. " [truncated]"
        return len
    end

    local off = BTH_SIZE
    if row.nack then
        local t = tree:add(F.aeth, tvb(off, AETH_SIZE))
        t:set_text("ACK Extended Transport Header (AETH)")
        local syn = tvb(off, 1):uint()
        local st = t:add(F.aeth_syndrome, tvb(off, 1))
        st:add(F.aeth_type, tvb(off, 1))
        st:add(F.aeth_value, tvb(off, 1))
        t:add(F.aeth_msn, tvb(off + 1, 3))
        local stype = bit.rshift(bit.band(syn, 0x60), 5)
        local sval = bit.band(syn, 0x1F)
        local what = aeth_types[stype]
        if stype == 3 then
            what = what .. ": " .. (aeth_nak_codes[sval] or ("code " .. sval))
        end
        st:append_text(" (" .. what .. ")")
        off = off + AETH_SIZE
        local ish = tree:add(F.ish, tvb(off, ISH_SIZE))
        ish:set_text("IRN SACK Header (ISH)")
        ish:add(F.ish_reserved, tvb(off, 1))
        ish:add(F.ish_sack_psn, tvb(off + 1, 3))
        local sack = tvb(off + 1, 3):uint()
        -- The BTH PSN of the NACK is the responder's expected (cumulative) PSN.
        tree:add(F.irn_expected_psn, psn):set_generated()
        ish:add_proto_expert_info(E.irn_nack, string.format("IRN NACK: expected PSN %d, PSN %d "
            .. "arrived out of order", psn, sack))
        info[#info + 1] = string.format("expected=%d sack=%d msn=%d", psn, sack,
            tvb(off - AETH_SIZE + 1, 3):uint())
        if stype ~= 3 or sval ~= 0 then
            info[#info + 1] = "(" .. what .. ")"
        end
        off = off + ISH_SIZE
    else
        info[#info + 1] = string.format("PSN=%d", psn)
        if row.reth then
            local t = tree:add(F.reth, tvb(off, RETH_SIZE))
            t:set_text("RDMA Extended Transport Header (RETH)")
            t:add(F.va, tvb(off, 8))
            t:add(F.rkey, tvb(off + 8, 4))
            t:add(F.dma_len, tvb(off + 12, 4))
            off = off + RETH_SIZE
        end
        local t = tree:add(F.irh, tvb(off, IRH_SIZE))
        t:set_text("IRN Request Header (IRH)")
        t:add(F.irh_offset, tvb(off, 4))
        t:add(F.irh_recv_wqe_sn, tvb(off + 4, 4))
        info[#info + 1] = string.format("off=%d", tvb(off, 4):uint())
        if op < IRN_BASE + 6 or row.imm then
            info[#info + 1] = string.format("wqe=%d", tvb(off + 4, 4):uint())
        end
        off = off + IRH_SIZE
        if row.imm then
            tree:add(F.imm, tvb(off, IMM_SIZE))
            info[#info + 1] = string.format("imm=0x%08x", tvb(off, 4):uint())
            off = off + IMM_SIZE
        end
    end

    -- Payload and pad.
    local padded = len - off - ICRC_SIZE
    local payload_len = padded - pad
    if row.nack and padded ~= 0 then
        tree:add_proto_expert_info(E.unexpected_payload)
    elseif pad > padded or padded % 4 ~= 0 then
        tree:add_proto_expert_info(E.bad_pad)
    end
    if payload_len < 0 then payload_len = 0 end
    if payload_len > 0 then
        tree:add(F.payload, tvb(off, payload_len))
    end
    tree:add(F.payload_len, payload_len):set_generated() -- 0 on a NACK, as on MetaRoCE ACKs
    if not row.nack then
        info[#info + 1] = string.format("len=%d", payload_len)
    end
    if padded - payload_len > 0 then
        tree:add(F.pad_bytes, tvb(off + payload_len, padded - payload_len))
    end

    -- Retransmission: the same (addresses, QP, PSN) data packet seen in an earlier frame.
    if not row.nack then
        local key = table.concat({ "irn", tostring(pinfo.src), tostring(pinfo.dst), qp, psn }, "/")
        if mark_retransmission(tree, pinfo, key) then
            info[#info + 1] = "[retransmission]"
        end
    end

    if add_own_icrc(tree, tvb) == CK_BAD then
        info[#info + 1] = "[bad ICRC]"
    end
    pinfo.cols.info = table.concat(info, " ")
    return len
end

---------------------------------------------------------------------------------------------
-- Registration: take UDP 4791 and chain to Wireshark's RoCEv2 dissector for the opcodes
-- that are neither MetaRoCE nor IRN.
---------------------------------------------------------------------------------------------

local udp_port = DissectorTable.get("udp.port")
local roce_handle = udp_port:get_dissector(ROCE_PORT) -- Wireshark's "infiniband" (RRoCE)
local data_handle = Dissector.get("data")

function metaroce.dissector(tvb, pinfo, root)
    if tvb:len() >= 1 then
        local op = tvb(0, 1):uint()
        if OPCODES[op] ~= nil or IRN_OPCODES[op] ~= nil then
            if tvb:len() < BTH_SIZE then
                local t = root:add(metaroce, tvb())
                t:add_proto_expert_info(E.truncated)
                return tvb:len()
            end
            if IRN_OPCODES[op] ~= nil then
                return dissect_irn(tvb, pinfo, root)
            end
            return dissect_metaroce(tvb, pinfo, root)
        end
    end
    local consumed = (roce_handle or data_handle):call(tvb, pinfo, root)
    if metaroce.prefs.check_roce_icrc and tvb:len() >= BTH_SIZE + ICRC_SIZE then
        local t = root:add(roce_icrc, tvb(tvb:len() - ICRC_SIZE, ICRC_SIZE))
        local status = add_icrc(t, tvb, tvb:len() - ICRC_SIZE, RF.status, RF.icrc,
            RF.computed, RE_bad, nil)
        t:append_text(": " .. checksum_status[status])
    end
    return consumed
end

udp_port:add(ROCE_PORT, metaroce)
