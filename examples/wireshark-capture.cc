/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Capture generator for the Wireshark dissector (tools/wireshark/metaroce.lua) and its tests.
 *
 * Runs two short MetaRoCE transfers (coalesced ACKs, the default, and per-path ACKs) and two
 * short RoCEv2 transfers (go-back-N, and IRN selective repeat) between two endpoints on the
 * fake-clock engine testbed, with targeted and random loss, ECN marking, a receive that is posted
 * late (RNR NAKs) and, for MetaRoCE, a path that is black-holed for a while (path failure, probes).
 * Every datagram an endpoint transmits is captured at the sender's NIC, before the link's faults
 * act on it, encapsulated with metaroce::EncapsulateFrame() and written to a pcap file (DLT_EN10MB,
 * nanosecond timestamps). A JSON sidecar lists, per frame, what the engine sent as the engine's own
 * parser (metaroce::ParseDatagram) reads it, so tests can compare Wireshark's view with the
 * engine's.
 *
 * The connections get QPN --first-qpn (default 2, the engine's FIRST_QPN: InfiniBand reserves
 * QP 0 and QP 1, and Wireshark decodes the payload of any packet to QP 1 as a management
 * datagram); a larger value creates unused connections first.
 *
 * Output, in --out=DIR (default "."):
 *   metaroce.pcap, metaroce.json   the MetaRoCE run (ackPolicy "coalesced": MR_ACK_COALESCED)
 *   metaroce-per-path.{pcap,json}  the same with ackPolicy "per-path" (one MR_ACK per path)
 *   rocev2.pcap,   rocev2.json     the RoCEv2 baseline run (go-back-N)
 *   rocev2-read.pcap, .json        RDMA READ and atomics on the RoCEv2 baseline (go-back-N)
 *   metaroce-read.pcap, .json      the same work on MetaRoCE (4 paths)
 *   irn.pcap,      irn.json        the RoCEv2 baseline with rocev2.recovery = "irn" (IRN_*
 *                                  opcodes with IRH, IRN NACKs with ISH, selective repeats)
 */

#include "engine-network.h"
#include "metaroce-encap.h"
#include "metaroce-icrc.h"
#include "metaroce-wire.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace metaroce;
using namespace metaroce::test;

namespace
{

/// pcap magic of nanosecond-resolution files (written little-endian).
constexpr uint32_t PCAP_MAGIC_NS = 0xa1b23c4d;
/// pcap link type of Ethernet.
constexpr uint32_t LINKTYPE_ETHERNET = 1;
/// pcap snapshot length: larger than any frame we write.
constexpr uint32_t PCAP_SNAPLEN = 262144;

/// I/O virtual address of the sender's buffer.
constexpr uint64_t SRC_IOVA = 0x7f0000100000;
/// I/O virtual address of the receiver's buffer.
constexpr uint64_t DST_IOVA = 0x7f1000200000;

/// Appends little-endian integers to a byte vector.
void
PutLe(std::vector<uint8_t>& out, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i)
    {
        out.push_back(uint8_t(v >> (8 * i)));
    }
}

/// A pcap file of Ethernet frames with nanosecond timestamps.
class PcapWriter
{
  public:
    /// Open \p path for writing; check Ok().
    explicit PcapWriter(const std::string& path)
        : m_file(std::fopen(path.c_str(), "wb"))
    {
        std::vector<uint8_t> h;
        PutLe(h, PCAP_MAGIC_NS, 4);
        PutLe(h, 2, 2); // version major
        PutLe(h, 4, 2); // version minor
        PutLe(h, 0, 4); // thiszone
        PutLe(h, 0, 4); // sigfigs
        PutLe(h, PCAP_SNAPLEN, 4);
        PutLe(h, LINKTYPE_ETHERNET, 4);
        Put(h);
    }

    ~PcapWriter()
    {
        if (m_file != nullptr)
        {
            std::fclose(m_file);
        }
    }

    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    /// \return true if the file is open and every write succeeded.
    bool Ok() const
    {
        return m_file != nullptr && m_ok;
    }

    /// Write one frame captured at \p t (picoseconds).
    void Write(Time t, const uint8_t* frame, size_t len)
    {
        std::vector<uint8_t> r;
        uint64_t ns = uint64_t(t / 1000);
        PutLe(r, ns / 1000000000u, 4);
        PutLe(r, ns % 1000000000u, 4);
        PutLe(r, len, 4);
        PutLe(r, len, 4);
        r.insert(r.end(), frame, frame + len);
        Put(r);
    }

  private:
    void Put(const std::vector<uint8_t>& bytes)
    {
        if (m_file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), m_file) != bytes.size())
        {
            m_ok = false;
        }
    }

    FILE* m_file;    //!< the open file
    bool m_ok{true}; //!< no write failed
};

/// \return the MAC address of testbed endpoint \p index (02:00:00:00:00:index+1).
MacAddress
MacOf(uint32_t index)
{
    return MacAddress{{0x02, 0x00, 0x00, 0x00, 0x00, uint8_t(index + 1)}};
}

/// \return \p ip (host order) as dotted quad.
std::string
IpString(uint32_t ip)
{
    char s[32];
    std::snprintf(s,
                  sizeof(s),
                  "%u.%u.%u.%u",
                  ip >> 24,
                  (ip >> 16) & 0xff,
                  (ip >> 8) & 0xff,
                  ip & 0xff);
    return s;
}

/**
 * \return the JSON keys of one path's receive state (an MAH, or an ACK record of a coalesced
 * ACK): path, epoch, \p flags (as on the wire), CE count, PSNs and the SACKed PSNs, each
 * after a ", ".
 */
std::string
PathStateJson(const Mah& m, uint8_t flags)
{
    char b[256];
    std::snprintf(b,
                  sizeof(b),
                  ", \"path_id\": %u, \"path_epoch\": %u, \"ack_flags\": %u, \"ce_count\": %u, "
                  "\"cum_psn\": %u, \"trigger_psn\": %u, \"sack_psns\": [",
                  m.pathId,
                  m.pathEpoch,
                  flags,
                  m.ceCount,
                  m.cumulativePsn,
                  m.triggerPsn);
    std::string s = b;
    const char* sep = "";
    for (uint32_t i = 0; i < SACK_BITS; ++i)
    {
        if (m.SackBit(i))
        {
            std::snprintf(b, sizeof(b), "%s%u", sep, PsnAdd(m.cumulativePsn, 1 + i));
            s += b;
            sep = ", ";
        }
    }
    return s + "]";
}

/**
 * \return the JSON keys "records" (the ACK records of coalesced ACK \p p as the engine's
 * AckRecord::Read() reads them from the payload, each with its AckDelay and its flags as on
 * the wire, FLAG_SACK included) and "records_parse": "OK" if the payload is exactly
 * RecordCount records, else what is wrong.
 */
std::string
RecordsJson(const ParsedPacket& p)
{
    std::string s = ", \"records\": [";
    size_t off = 0;
    uint32_t n = 0;
    while (off < p.payloadLength)
    {
        AckRecord r;
        size_t used = AckRecord::Read(p.payload + off, p.payloadLength - off, r);
        if (used == 0)
        {
            break;
        }
        uint8_t wireFlags =
            uint8_t(r.mah.flags | (used > AckRecord::SIZE ? AckRecord::FLAG_SACK : 0));
        s += std::string(n == 0 ? "" : ", ") + "{\"ack_delay\": " + std::to_string(r.delay) +
             PathStateJson(r.mah, wireFlags) + "}";
        off += used;
        ++n;
    }
    std::string status = "OK";
    if (off != p.payloadLength)
    {
        status = std::to_string(p.payloadLength - off) + " bytes after the last record";
    }
    else if (n != p.mch.recordCount)
    {
        status = std::to_string(n) + " records, RecordCount " + std::to_string(p.mch.recordCount);
    }
    return s + "], \"records_parse\": \"" + status + "\"";
}

/// Writes the pcap and the JSON sidecar of one run from the testbed's transmit tap.
class CaptureSink
{
  public:
    CaptureSink(const std::string& stem, const std::string& transport)
        : m_pcap(stem + ".pcap"),
          m_jsonPath(stem + ".json"),
          m_transport(transport),
          m_frame(FRAME_HEADERS_SIZE + MAX_DATAGRAM_SIZE)
    {
    }

    /// The testbed's onTransmit hook.
    void OnTransmit(Time now, uint32_t src, const TxDatagram& tx, bool dropped)
    {
        uint32_t dstIndex = tx.meta.dstIp - EngineNetwork::AddressOf(0);
        size_t len = EncapsulateFrame(m_frame.data(),
                                      m_frame.size(),
                                      MacOf(src),
                                      MacOf(dstIndex),
                                      tx.meta,
                                      tx.buffer,
                                      tx.length);
        if (len == 0)
        {
            m_ok = false;
            return;
        }
        m_pcap.Write(now, m_frame.data(), len);
        ++m_frames;
        Describe(now, src, tx, dropped);
    }

    /// Write the sidecar. \return true if the pcap and the sidecar were written completely.
    bool Finish(const std::string& summary)
    {
        FILE* f = std::fopen(m_jsonPath.c_str(), "w");
        if (f == nullptr)
        {
            return false;
        }
        std::fprintf(f,
                     "{\n\"transport\": \"%s\",\n\"summary\": %s,\n\"frames\": [\n",
                     m_transport.c_str(),
                     summary.c_str());
        for (size_t i = 0; i < m_records.size(); ++i)
        {
            std::fprintf(f, "%s%s\n", m_records[i].c_str(), i + 1 < m_records.size() ? "," : "");
        }
        std::fprintf(f, "]\n}\n");
        bool ok = std::fclose(f) == 0;
        return ok && m_ok && m_pcap.Ok();
    }

    /// \return frames written so far.
    uint64_t Frames() const
    {
        return m_frames;
    }

  private:
    /// One JSON object per frame: the engine parser's view of the datagram.
    void Describe(Time now, uint32_t src, const TxDatagram& tx, bool dropped)
    {
        std::string s;
        char b[256];
        auto add = [&](const char* key, uint64_t v) {
            std::snprintf(b, sizeof(b), ", \"%s\": %" PRIu64, key, v);
            s += b;
        };
        auto addStr = [&](const char* key, const std::string& v) {
            s += std::string(", \"") + key + "\": \"" + v + "\"";
        };
        std::snprintf(b, sizeof(b), "{\"frame\": %" PRIu64, m_frames);
        s += b;
        add("time_ns", uint64_t(now / 1000));
        add("src", src);
        addStr("ip_src", IpString(tx.meta.srcIp));
        addStr("ip_dst", IpString(tx.meta.dstIp));
        add("udp_sport", tx.meta.srcPort);
        add("udp_dport", tx.meta.dstPort);
        add("dscp", tx.meta.dscp);
        add("ecn", uint8_t(tx.meta.ecn));
        s += std::string(", \"dropped\": ") + (dropped ? "true" : "false");
        s += std::string(", \"icrc_ok\": ") +
             (CheckDatagramIcrc(tx.meta, tx.buffer, tx.length) ? "true" : "false");
        add("icrc", LoadIcrc(tx.buffer + tx.length - ICRC_SIZE));
        add("length", tx.length);
        ParsedPacket p;
        ParseStatus st = ParseDatagram(tx.buffer, tx.length, p);
        addStr("parse", ParseStatusName(st));
        if (st == ParseStatus::OK)
        {
            const uint32_t h = p.info->headers;
            add("opcode", p.bth.opcode);
            addStr("opcode_name", p.info->name);
            add("psn", p.bth.psn);
            add("dest_qp", p.bth.destQp);
            add("pad", p.bth.padCount);
            add("pkey", p.bth.pkey);
            add("ack_req", p.bth.ackReq);
            add("solicited", p.bth.solicited);
            add("becn", p.bth.becn);
            add("payload_len", p.payloadLength);
            if (h & HDR_MDH)
            {
                add("path_id", p.mdh.pathId);
                add("path_epoch", p.mdh.pathEpoch);
                add("stream", p.mdh.streamId);
                add("msg_seq", p.mdh.messageSeq);
                add("offset", p.mdh.offset);
            }
            if (h & HDR_RETH)
            {
                add("va", p.reth.va);
                add("rkey", p.reth.rkey);
                add("dma_len", p.reth.dmaLength);
            }
            if (h & HDR_IRH)
            {
                add("irh_offset", p.irh.offset);
                add("recv_wqe_sn", p.irh.recvWqeSn);
            }
            if (h & HDR_RSH)
            {
                add("recv_slot", p.rsh.recvSlot);
                add("msg_len", p.rsh.messageLength);
            }
            if (h & HDR_IMMDT)
            {
                add("imm", p.immDt);
            }
            if (h & HDR_AETH)
            {
                add("aeth_syndrome", p.aeth.syndrome);
                add("msn", p.aeth.msn);
            }
            if (h & HDR_ISH)
            {
                add("sack_psn", p.ish.sackPsn);
            }
            if (h & HDR_ATOMIC_ETH)
            {
                add("va", p.atomicEth.va);
                add("rkey", p.atomicEth.rkey);
                add("swap_add", p.atomicEth.swapAdd);
                add("compare", p.atomicEth.compare);
            }
            if (h & HDR_ATOMIC_ACK_ETH)
            {
                add("original", p.atomicAckEth.original);
            }
            if (h & HDR_MAH)
            {
                s += PathStateJson(p.mah, p.mah.flags);
                add("rate_hint", p.mah.rateHint);
            }
            if (h & HDR_MCH)
            {
                add("rate_hint", p.mch.rateHint);
                add("record_count", p.mch.recordCount);
                s += RecordsJson(p);
            }
            if (h & HDR_MNH)
            {
                add("stream", p.mnh.streamId);
                add("nak_syndrome", p.mnh.syndrome);
                add("path_id", p.mnh.pathId);
                add("msg_seq", p.mnh.messageSeq);
                add("offset", p.mnh.offset);
                add("path_epoch", p.mnh.pathEpoch);
                add("nak_psn", p.mnh.psn);
            }
        }
        s += "}";
        m_records.push_back(std::move(s));
    }

    PcapWriter m_pcap;                  //!< the capture
    std::string m_jsonPath;             //!< sidecar path
    std::string m_transport;            //!< "metaroce", "rocev2" or "irn"
    std::vector<uint8_t> m_frame;       //!< frame buffer
    std::vector<std::string> m_records; //!< sidecar lines
    uint64_t m_frames{0};               //!< frames written
    bool m_ok{true};                    //!< every frame was encapsulated
};

/// Drops the first transmission of chosen PSNs on a path (the retransmission gets through).
struct FirstTransmissionDrop
{
    std::set<std::pair<int, uint32_t>> targets; //!< (path id, PSN) pairs to drop once
    std::set<std::pair<int, uint32_t>> seen;    //!< targets already dropped

    bool operator()(const WireInfo& w)
    {
        auto key = std::make_pair(w.pathId, w.psn);
        if (targets.count(key) == 0 || seen.count(key) != 0)
        {
            return false;
        }
        seen.insert(key);
        return true;
    }
};

/// Result of one run, for the summary line and the sidecar.
struct RunResult
{
    uint64_t frames{0};
    uint64_t completionsA{0};
    uint64_t completionsB{0};
    uint64_t failures{0};
    uint64_t dropped{0};
    bool ok{false};
};

std::string
SummaryJson(const RunResult& r, uint64_t seed)
{
    char b[256];
    std::snprintf(b,
                  sizeof(b),
                  "{\"seed\": %" PRIu64 ", \"frames\": %" PRIu64
                  ", \"completions_sender\": %" PRIu64 ", \"completions_receiver\": %" PRIu64
                  ", \"failed_completions\": %" PRIu64 ", \"dropped\": %" PRIu64 "}",
                  seed,
                  r.frames,
                  r.completionsA,
                  r.completionsB,
                  r.failures,
                  r.dropped);
    return b;
}

/**
 * The transfer both runs perform from endpoint a to endpoint b: a WRITE whose last packet
 * needs a pad byte, a WRITE with immediate, a SEND posted before its receive (RNR NAK until
 * the receive is posted at 40 us) and a SEND with immediate of an odd length.
 */
void
PostWorkload(EngineNetwork& n,
             uint32_t a,
             uint32_t b,
             uint32_t qa,
             uint32_t qb,
             bool streams,
             std::vector<uint8_t>& src,
             std::vector<uint8_t>& dst,
             RunResult& r)
{
    // Fixed I/O virtual addresses keep the capture identical from run to run.
    MemoryRegion srcMr =
        n.At(a).RegisterMemory(src.data(), src.size(), ACCESS_LOCAL_WRITE, SRC_IOVA);
    MemoryRegion dstMr = n.At(b).RegisterMemory(dst.data(),
                                                dst.size(),
                                                ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE,
                                                DST_IOVA);
    auto post =
        [&, srcMr, dstMr](uint64_t id, WrOpcode op, uint64_t off, uint32_t len, uint16_t stream) {
            SendWr wr;
            wr.wrId = id;
            wr.opcode = op;
            wr.sge = {srcMr.addr + off, len, srcMr.lkey};
            wr.remoteAddr = dstMr.addr + off;
            wr.rkey = dstMr.rkey;
            wr.immData = 0xC0FFEE00u + uint32_t(id);
            wr.streamId = streams ? stream : 0;
            if (n.At(a).PostSend(n.Now(), qa, wr) != PostStatus::OK)
            {
                ++r.failures;
            }
        };
    // Receives for the WRITE_IMM (stream 1) and the SEND_IMM (stream 1) up front; the SEND on
    // stream 0 finds no receive until 40 us.
    for (uint64_t id : {100u, 101u})
    {
        RecvWr rwr;
        rwr.wrId = id;
        rwr.sge = {dstMr.addr + 60000 + (id - 100) * 4096, 4096, dstMr.lkey};
        rwr.streamId = streams ? 1 : 0;
        n.At(b).PostRecv(0, qb, rwr);
    }
    post(1, WrOpcode::RDMA_WRITE, 0, 24 * 1024 + 7, 0); // 25 packets, last one padded
    post(2, WrOpcode::RDMA_WRITE_WITH_IMM, 32768, 3000, 1);
    post(3, WrOpcode::SEND_WITH_IMM, 40000, 101, 1); // pad 3
    post(4, WrOpcode::SEND, 45000, 5000, 0);         // waits for a receive (RNR)
    n.At(MicroSeconds(40), [&n, b, qb, dstMr]() {
        RecvWr rwr;
        rwr.wrId = 102;
        rwr.sge = {dstMr.addr + 70000, 8192, dstMr.lkey};
        n.At(b).PostRecv(n.Now(), qb, rwr);
        n.Kick(b);
    });
    n.Kick(a);
}

/**
 * Create (and never connect) placeholder connections on \p a and \p b so that the next
 * connection gets QPN \p firstQpn (the engine hands out FIRST_QPN first).
 */
void
SkipQpns(EngineNetwork& n, uint32_t a, uint32_t b, const ConnectionConfig& cfg, uint32_t firstQpn)
{
    for (uint32_t q = FIRST_QPN; q < firstQpn; ++q)
    {
        uint32_t unused = 0;
        n.At(a).CreateConnection(cfg, unused);
        n.At(b).CreateConnection(cfg, unused);
    }
}

/**
 * Count the run's completions, failures, drops and frames into \p r and write the capture's
 * summary; the run is ok when every completion succeeded and each side has the expected count.
 */
void
FinishRun(EngineNetwork& n,
          uint32_t a,
          uint32_t b,
          CaptureSink& sink,
          uint64_t seed,
          uint64_t expectA,
          uint64_t expectB,
          RunResult& r)
{
    for (uint32_t i : {a, b})
    {
        for (const Completion& c : n.Completions(i))
        {
            r.failures += c.status != WcStatus::SUCCESS;
        }
    }
    r.completionsA = n.Completions(a).size();
    r.completionsB = n.Completions(b).size();
    r.dropped = n.Dropped();
    r.frames = sink.Frames();
    r.ok = sink.Finish(SummaryJson(r, seed)) && r.failures == 0 && r.completionsA == expectA &&
           r.completionsB == expectB;
}

/**
 * The MetaRoCE run with ACK policy \p ackPolicy: "coalesced" (the default; metaroce.pcap:
 * MR_ACK_COALESCED with a record per path) or "per-path" (metaroce-per-path.pcap: MR_ACK).
 */
RunResult
RunMetaRoceMode(const std::string& dir,
                uint64_t seed,
                uint32_t firstQpn,
                const std::string& ackPolicy)
{
    RunResult r;
    const std::string stem = ackPolicy == "per-path" ? "metaroce-per-path" : "metaroce";
    CaptureSink sink(dir + "/" + stem, "metaroce");
    NetworkConfig net;
    net.seed = seed;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    ConnectionConfig cfg;
    cfg.transport = "metaroce";
    cfg.mtu = 1024;
    cfg.numPaths = 4;
    cfg.sourcePortBase = 49152;
    cfg.initialPathWindow = 4;
    cfg.ackPolicy = ackPolicy;
    SkipQpns(n, a, b, cfg, firstQpn);
    auto [qa, qb] = n.Connect(a, b, cfg);
    n.onTransmit = [&sink](Time t, uint32_t s, const TxDatagram& tx, bool d) {
        sink.OnTransmit(t, s, tx, d);
    };
    // Data losses the SACK bitmap must reveal: first transmissions of PSNs 2 and 3 on path 1
    // and of PSN 1 on path 2; plus 3% random loss on data and 3% on ACKs; path 2 marks CE.
    FirstTransmissionDrop drops;
    drops.targets = {{1, 2}, {1, 3}, {2, 1}};
    n.Link(a, b).dropIf = [&drops](const WireInfo& w) { return drops(w); };
    n.Link(a, b).loss = 0.03;
    n.Link(b, a).loss = 0.03;
    n.Link(a, b, 2).ceMark = 0.3;
    // Path 3 is a black hole from the start until 1.5 ms: it fails and is probed back in.
    n.Link(a, b, 3).blackHole = true;
    n.Link(b, a, 3).blackHole = true;
    n.At(MicroSeconds(1500), [&n, a, b]() {
        n.Link(a, b, 3).blackHole = false;
        n.Link(b, a, 3).blackHole = false;
    });
    std::vector<uint8_t> src(96 * 1024);
    std::vector<uint8_t> dst(96 * 1024);
    for (size_t i = 0; i < src.size(); ++i)
    {
        src[i] = uint8_t(i * 131 + 7);
    }
    PostWorkload(n, a, b, qa, qb, true, src, dst, r);
    // More data after the path came back, so it carries traffic again.
    n.At(MicroSeconds(1800), [&]() {
        SendWr wr;
        wr.wrId = 5;
        MemoryRegion s = n.At(a).RegisterMemory(src.data(),
                                                src.size(),
                                                ACCESS_LOCAL_WRITE,
                                                SRC_IOVA + 0x1000000);
        wr.sge = {s.addr, 8192, s.lkey};
        MemoryRegion d = n.At(b).RegisterMemory(dst.data() + 80000,
                                                16384,
                                                ACCESS_REMOTE_WRITE,
                                                DST_IOVA + 0x1000000);
        wr.remoteAddr = d.addr;
        wr.rkey = d.rkey;
        if (n.At(a).PostSend(n.Now(), qa, wr) != PostStatus::OK)
        {
            ++r.failures;
        }
        n.Kick(a);
    });
    n.RunUntilIdle(MilliSeconds(20));
    FinishRun(n, a, b, sink, seed, 5, 3, r);
    return r;
}

/**
 * The RoCEv2 baseline run, with go-back-N (\p irn false: rocev2.pcap) or IRN selective repeat
 * (\p irn true: irn.pcap). Same workload and faults; in IRN mode the lost PSNs show up as IRN
 * NACKs (one per out-of-order arrival) and selective retransmissions.
 */
RunResult
RunRoceV2Mode(const std::string& dir, uint64_t seed, uint32_t firstQpn, bool irn)
{
    RunResult r;
    const char* stem = irn ? "irn" : "rocev2";
    CaptureSink sink(dir + "/" + stem, stem);
    NetworkConfig net;
    net.seed = seed;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    ConnectionConfig cfg;
    cfg.transport = "rocev2";
    cfg.mtu = 1024;
    cfg.sourcePortBase = 49999;
    cfg.rocev2.localAckTimeout = 7;
    cfg.rocev2.cnpInterval = MicroSeconds(2);
    if (irn)
    {
        cfg.rocev2.recovery = "irn";
    }
    SkipQpns(n, a, b, cfg, firstQpn);
    auto [qa, qb] = n.Connect(a, b, cfg);
    n.onTransmit = [&sink](Time t, uint32_t s, const TxDatagram& tx, bool d) {
        sink.OnTransmit(t, s, tx, d);
    };
    // Go-back-N rounds: the first transmissions of PSNs 5 and 17 are lost, plus 2% random
    // loss both ways; CE marks make the receiver send CNPs.
    FirstTransmissionDrop drops;
    drops.targets = {{-1, 5}, {-1, 17}};
    n.Link(a, b).dropIf = [&drops](const WireInfo& w) { return drops(w); };
    n.Link(a, b).loss = 0.02;
    n.Link(b, a).loss = 0.02;
    n.Link(a, b).ceMark = 0.1;
    std::vector<uint8_t> src(96 * 1024);
    std::vector<uint8_t> dst(96 * 1024);
    for (size_t i = 0; i < src.size(); ++i)
    {
        src[i] = uint8_t(i * 151 + 3);
    }
    PostWorkload(n, a, b, qa, qb, false, src, dst, r);
    n.RunUntilIdle(MilliSeconds(50));
    FinishRun(n, a, b, sink, seed, 4, 3, r);
    return r;
}

/**
 * RDMA READ and atomics on the RoCEv2 baseline (go-back-N), or on MetaRoCE (\p metaroce): a
 * five-packet READ (RoCEv2: Response First, Middle, Last; the last one padded), a WRITE, a
 * Compare&Swap, a Fetch&Add, a one-packet and an empty READ (RoCEv2: Response Only). RoCEv2:
 * the first READ Response Middle is lost, so the READ is asked for again from its PSN (a
 * duplicate READ, served again); the first Atomic Acknowledge is lost, so the Fetch&Add is
 * resent and answered from the replay cache. MetaRoCE: the first READ answer packet and the
 * first atomic answer are lost and resent by the responder.
 */
RunResult
RunReadAtomicMode(const std::string& dir, uint64_t seed, uint32_t firstQpn, bool metaroce)
{
    RunResult r;
    const char* stem = metaroce ? "metaroce-read" : "rocev2-read";
    CaptureSink sink(dir + "/" + stem, stem);
    NetworkConfig net;
    net.seed = seed;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    ConnectionConfig cfg;
    cfg.transport = metaroce ? "metaroce" : "rocev2";
    cfg.numPaths = 4;
    cfg.mtu = 1024;
    cfg.sourcePortBase = 50001;
    cfg.rocev2.localAckTimeout = 7;
    SkipQpns(n, a, b, cfg, firstQpn);
    auto [qa, qb] = n.Connect(a, b, cfg);
    n.onTransmit = [&sink](Time t, uint32_t s, const TxDatagram& tx, bool d) {
        sink.OnTransmit(t, s, tx, d);
    };
    std::set<uint8_t> lostOnce =
        metaroce ? std::set<uint8_t>{MR_READ_RESPONSE, MR_ATOMIC_RESPONSE}
                 : std::set<uint8_t>{RC_READ_RESPONSE_MIDDLE, RC_ATOMIC_ACKNOWLEDGE};
    n.Link(b, a).dropIf = [&lostOnce](const WireInfo& w) { return lostOnce.erase(w.opcode) > 0; };
    std::vector<uint8_t> local(16 * 1024);
    std::vector<uint8_t> remote(16 * 1024);
    for (size_t i = 0; i < remote.size(); ++i)
    {
        remote[i] = uint8_t(i * 151 + 3);
    }
    MemoryRegion lmr =
        n.At(a).RegisterMemory(local.data(), local.size(), ACCESS_LOCAL_WRITE, SRC_IOVA);
    MemoryRegion rmr =
        n.At(b).RegisterMemory(remote.data(),
                               remote.size(),
                               ACCESS_REMOTE_READ | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_ATOMIC,
                               DST_IOVA);
    auto post = [&](uint64_t id, WrOpcode op, uint64_t at, uint64_t from, uint32_t len) {
        SendWr wr;
        wr.wrId = id;
        wr.opcode = op;
        wr.sge = {lmr.addr + at, len, lmr.lkey};
        wr.remoteAddr = rmr.addr + from;
        wr.rkey = rmr.rkey;
        wr.compareAdd = op == WrOpcode::ATOMIC_CMP_AND_SWP ? 0x8C8B8A8988878685ull : 7;
        wr.swap = 0x0102030405060708ull;
        if (n.At(a).PostSend(n.Now(), qa, wr) != PostStatus::OK)
        {
            ++r.failures;
        }
    };
    std::memcpy(remote.data(), "\x85\x86\x87\x88\x89\x8a\x8b\x8c", 8); // CAS matches
    post(1, WrOpcode::RDMA_READ, 0, 1024, 4 * 1024 + 5);               // PSNs 0-4, pad 3
    post(2, WrOpcode::RDMA_WRITE, 8192, 8192, 2000);                   // PSNs 5-6
    post(3, WrOpcode::ATOMIC_CMP_AND_SWP, 12288, 0, 8);                // PSN 7
    post(4, WrOpcode::ATOMIC_FETCH_AND_ADD, 12296, 8, 8);              // PSN 8
    post(5, WrOpcode::RDMA_READ, 12800, 6000, 100);                    // PSN 9
    post(6, WrOpcode::RDMA_READ, 13000, 6200, 0);                      // PSN 10
    n.Kick(a);
    n.RunUntilIdle(MilliSeconds(20));
    bool exact = std::memcmp(local.data(), remote.data() + 1024, 4 * 1024 + 5) == 0 &&
                 std::memcmp(local.data() + 12800, remote.data() + 6000, 100) == 0;
    r.failures += exact ? 0 : 1;
    FinishRun(n, a, b, sink, seed, 6, 0, r);
    return r;
}

RunResult
RunRoceV2Read(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunReadAtomicMode(dir, seed, firstQpn, false);
}

RunResult
RunMetaRoceRead(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunReadAtomicMode(dir, seed, firstQpn, true);
}

RunResult
RunMetaRoce(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunMetaRoceMode(dir, seed, firstQpn, "coalesced");
}

RunResult
RunMetaRocePerPath(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunMetaRoceMode(dir, seed, firstQpn, "per-path");
}

RunResult
RunRoceV2(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunRoceV2Mode(dir, seed, firstQpn, false);
}

RunResult
RunIrn(const std::string& dir, uint64_t seed, uint32_t firstQpn)
{
    return RunRoceV2Mode(dir, seed, firstQpn, true);
}

} // namespace

int
main(int argc, char** argv)
{
    std::string out = ".";
    uint64_t seed = 1;
    uint32_t firstQpn = 2;
    for (int i = 1; i < argc; ++i)
    {
        std::string arg = argv[i];
        if (arg.rfind("--out=", 0) == 0)
        {
            out = arg.substr(6);
        }
        else if (arg.rfind("--seed=", 0) == 0)
        {
            seed = std::strtoull(arg.c_str() + 7, nullptr, 10);
        }
        else if (arg.rfind("--first-qpn=", 0) == 0)
        {
            firstQpn = uint32_t(std::strtoul(arg.c_str() + 12, nullptr, 10));
            firstQpn = firstQpn < FIRST_QPN ? FIRST_QPN : firstQpn > 64 ? 64 : firstQpn;
        }
        else
        {
            std::fprintf(stderr,
                         "usage: %s [--out=DIR] [--seed=N] [--first-qpn=N (2-64, default 2)]\n"
                         "writes DIR/metaroce.pcap, DIR/metaroce.json, "
                         "DIR/metaroce-per-path.pcap, DIR/metaroce-per-path.json, "
                         "DIR/rocev2.pcap, DIR/rocev2.json, DIR/irn.pcap, DIR/irn.json, "
                         "DIR/rocev2-read.pcap, DIR/rocev2-read.json, "
                         "DIR/metaroce-read.pcap and DIR/metaroce-read.json\n",
                         argv[0]);
            return arg == "--help" ? 0 : 2;
        }
    }
    std::string cmd = "mkdir -p '" + out + "'";
    if (std::system(cmd.c_str()) != 0)
    {
        std::fprintf(stderr, "error: cannot create %s\n", out.c_str());
        return 1;
    }
    bool ok = true;
    for (auto run : {std::make_pair("metaroce", &RunMetaRoce),
                     std::make_pair("metaroce-per-path", &RunMetaRocePerPath),
                     std::make_pair("rocev2", &RunRoceV2),
                     std::make_pair("irn", &RunIrn),
                     std::make_pair("rocev2-read", &RunRoceV2Read),
                     std::make_pair("metaroce-read", &RunMetaRoceRead)})
    {
        RunResult r = run.second(out, seed, firstQpn);
        std::printf("%-17s %4" PRIu64 " frames (%" PRIu64 " dropped by faults), %" PRIu64
                    " + %" PRIu64 " completions, %" PRIu64 " failed: %s/%s.pcap%s\n",
                    run.first,
                    r.frames,
                    r.dropped,
                    r.completionsA,
                    r.completionsB,
                    r.failures,
                    out.c_str(),
                    run.first,
                    r.ok ? "" : "  ERROR");
        ok = ok && r.ok;
    }
    return ok ? 0 : 1;
}
