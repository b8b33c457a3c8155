/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The receiver checks shared by metaroce-perf's server and metaroce-hil-fabric's simulated
 * hosts (metaroce-hil-verify.h): the pattern, the workload limits and the per-message check,
 * which must catch a wrong byte, a wrong message, a wrong length and a wrong slot.
 */

#include "metaroce-hil-verify.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <vector>

namespace metaroce
{
namespace hil
{
namespace
{

/// A WRITE-with-immediate completion of message \p seq.
Completion
WriteCompletion(uint64_t seq, uint32_t size)
{
    Completion c;
    c.status = WcStatus::SUCCESS;
    c.opcode = WcOpcode::RECV_RDMA_WITH_IMM;
    c.hasImm = true;
    c.immData = uint32_t(seq);
    c.byteLen = size;
    return c;
}

TEST(HilVerifyTest, PatternIsSeededAndDistinct)
{
    DataPattern a(7, 4096);
    DataPattern b(7, 4096);
    DataPattern other(8, 4096);
    EXPECT_EQ(std::memcmp(a.Message(0, 0, 5), b.Message(0, 0, 5), 4096), 0);
    EXPECT_NE(std::memcmp(a.Message(0, 0, 5), other.Message(0, 0, 5), 4096), 0);
    EXPECT_NE(std::memcmp(a.Message(0, 0, 5), a.Message(0, 0, 6), 4096), 0);
    EXPECT_NE(std::memcmp(a.Message(0, 0, 5), a.Message(1, 0, 5), 4096), 0);
    EXPECT_NE(std::memcmp(a.Message(0, 0, 5), a.Message(0, 1, 5), 4096), 0);
}

TEST(HilVerifyTest, CheckReceivedCatchesEveryKindOfError)
{
    const uint32_t size = 1000;
    DataPattern pattern(3, size);
    std::vector<uint8_t> slot(pattern.Message(0, 0, 9), pattern.Message(0, 0, 9) + size);
    ReceivedMessage m;
    m.write = true;
    m.size = size;
    m.seq = 9;
    m.slot = 9 % 4;
    m.got = slot.data();
    m.want = pattern.Message(0, 0, 9);
    EXPECT_EQ(CheckReceived(WriteCompletion(9, size), m), "");
    // Another message's immediate: out of order or lost.
    EXPECT_NE(CheckReceived(WriteCompletion(8, size), m).find("immediate 8"), std::string::npos);
    // A SEND completion where a WRITE was expected.
    Completion recv = WriteCompletion(9, size);
    recv.opcode = WcOpcode::RECV;
    EXPECT_NE(CheckReceived(recv, m).find("WRITE-with-immediate"), std::string::npos);
    // One corrupted byte, found at its offset.
    slot[617] ^= 0x40;
    EXPECT_EQ(CheckReceived(WriteCompletion(9, size), m), "data differs from byte 617");
    slot[617] ^= 0x40;
    // SEND: length and the consumed slot.
    m.write = false;
    recv.wrId = uint64_t(2) << WR_SEQ_BITS | m.slot;
    EXPECT_EQ(CheckReceived(recv, m), "");
    recv.byteLen = size - 1;
    EXPECT_NE(CheckReceived(recv, m).find("999 bytes"), std::string::npos);
    recv.byteLen = size;
    recv.wrId = uint64_t(2) << WR_SEQ_BITS | (m.slot + 1);
    EXPECT_NE(CheckReceived(recv, m).find("consumed receive slot"), std::string::npos);
}

TEST(HilVerifyTest, CheckWorkloadLimits)
{
    ConnectionConfig cfg;
    cfg.maxStreams = 4;
    cfg.maxOutstandingWrs = 256;
    cfg.maxPostedRecvs = 128;
    proto::Hello hello;
    proto::Workload* w = hello.mutable_workload();
    w->set_op("write");
    w->set_message_size(65536);
    w->set_connections(1);
    w->set_streams(1);
    w->set_depth(128);
    hello.add_queue_pairs()->set_qpn(1);
    hello.mutable_address()->set_ipv4(0x0a000001);
    EXPECT_EQ(CheckWorkload(hello, cfg), "");
    EXPECT_EQ(RegionBytes(*w), 128u * 65536);
    w->set_op("read");
    EXPECT_NE(CheckWorkload(hello, cfg).find("unknown op"), std::string::npos);
    w->set_op("send");
    w->set_streams(3); // 3 x 128 > 256 outstanding work requests
    EXPECT_NE(CheckWorkload(hello, cfg).find("depth"), std::string::npos);
    w->set_streams(5);
    EXPECT_NE(CheckWorkload(hello, cfg).find("stream count"), std::string::npos);
    w->set_streams(1);
    w->set_connections(2); // one queue pair listed
    EXPECT_NE(CheckWorkload(hello, cfg).find("connection count"), std::string::npos);
    w->set_connections(1);
    hello.mutable_address()->set_ipv4(0);
    EXPECT_NE(CheckWorkload(hello, cfg).find("no data address"), std::string::npos);
}

// The one Hello check of every server: version first, then the server's settings rule, then
// the workload against the settled settings and the region limit.
TEST(HilVerifyTest, CheckHelloOrderAndReasons)
{
    proto::Hello hello;
    hello.set_protocol_version(proto::VERSION_CURRENT);
    hello.set_software("test-client 1");
    hello.mutable_settings()->set_transport("metaroce");
    proto::Workload* w = hello.mutable_workload();
    w->set_op("write");
    w->set_message_size(65536);
    w->set_connections(1);
    w->set_streams(2);
    w->set_depth(64);
    hello.add_queue_pairs()->set_qpn(1);
    hello.mutable_address()->set_ipv4(0x0a000001);
    int ruleCalls = 0;
    auto adopt = [&ruleCalls](const proto::ConnectionSettings& s, ConnectionConfig& cfg) {
        ++ruleCalls;
        if (s.transport() != "metaroce")
        {
            return std::string("unknown transport '") + s.transport() + "'";
        }
        cfg.maxStreams = 2; // the workload is checked against the settled settings
        return std::string();
    };
    ConnectionConfig cfg;
    cfg.maxStreams = 1;
    EXPECT_EQ(CheckHello(hello, adopt, cfg), "");
    EXPECT_EQ(cfg.maxStreams, 2);
    EXPECT_EQ(ruleCalls, 1);

    // A wrong version is rejected before the settings are looked at.
    hello.set_protocol_version(proto::VERSION_CURRENT + 1);
    const std::string version = CheckHello(hello, adopt, cfg);
    EXPECT_NE(version.find("protocol version mismatch"), std::string::npos) << version;
    EXPECT_NE(version.find("test-client 1"), std::string::npos) << version;
    EXPECT_EQ(ruleCalls, 1);
    hello.set_protocol_version(proto::VERSION_CURRENT);

    // The rule's reason is the Reject reason as it is.
    hello.mutable_settings()->set_transport("tcp");
    EXPECT_EQ(CheckHello(hello, adopt, cfg), "unknown transport 'tcp'");
    hello.mutable_settings()->set_transport("metaroce");

    // Workload problems, the region limit included.
    w->set_op("read");
    EXPECT_EQ(CheckHello(hello, adopt, cfg).rfind("workload not acceptable: unknown op", 0), 0u);
    w->set_op("send");
    cfg = ConnectionConfig();
    cfg.maxMessageSize = MAX_REGION_BYTES;
    cfg.maxOutstandingWrs = 1024;
    cfg.maxPostedRecvs = 1024;
    w->set_message_size(MAX_REGION_BYTES / 64); // 2 streams x 64 slots: twice the limit
    const std::string region = CheckHello(hello, adopt, cfg);
    EXPECT_NE(region.find("workload not acceptable: buffer of"), std::string::npos) << region;
    EXPECT_NE(region.find("-byte limit"), std::string::npos) << region;
}

// Every server's Accept: version, software, address, connections with their source ports and
// the region only for WRITE.
TEST(HilVerifyTest, AcceptMessageCarriesTheSession)
{
    proto::DataAddress address;
    address.set_ipv4(0x0a000102);
    address.set_data_port(4791);
    MemoryRegion region;
    region.addr = 0x1000;
    region.length = 65536;
    region.rkey = 7;
    const proto::ControlMessage write =
        AcceptMessage("server 1", address, {11, 12, 13}, 56000, &region);
    ASSERT_TRUE(write.has_accept());
    const proto::Accept& a = write.accept();
    EXPECT_EQ(a.protocol_version(), uint32_t(proto::VERSION_CURRENT));
    EXPECT_EQ(a.software(), "server 1");
    EXPECT_EQ(a.address().ipv4(), 0x0a000102u);
    ASSERT_EQ(a.queue_pairs_size(), 3);
    EXPECT_EQ(a.queue_pairs(2).qpn(), 13u);
    EXPECT_EQ(a.queue_pairs(2).source_port_base(), 56000u + 2 * PORTS_PER_CONNECTION);
    EXPECT_EQ(a.region().length(), 65536u);
    EXPECT_EQ(a.region().rkey(), 7u);
    const proto::ControlMessage send = AcceptMessage("server 1", address, {11}, 56000, nullptr);
    EXPECT_FALSE(send.accept().has_region());
}

/// A ReceiveEngine that records what is posted.
class RecordingEngine : public ReceiveEngine
{
  public:
    PostStatus PostRecv(uint32_t qpn, const RecvWr& wr) override
    {
        posted.emplace_back(qpn, wr);
        return PostStatus::OK;
    }

    std::vector<std::pair<uint32_t, RecvWr>> posted; //!< in order
};

// The receiving half both servers share: every slot of every stream posted, a right message
// counted and its slot posted again, a wrong one (data or order) reported where it is, a
// completion of another connection left alone, and the verdict checked against Finish.
TEST(HilVerifyTest, VerifyingReceiverChecksEveryMessageAndTheSendersCounts)
{
    constexpr uint64_t SIZE = 256;
    constexpr uint32_t DEPTH = 2;
    constexpr uint64_t SEED = 99;
    VerifyingReceiver::Layout layout;
    layout.write = true;
    layout.size = SIZE;
    layout.depth = DEPTH;
    layout.streamsPerConnection = 2;
    layout.qpns = {7, 9};
    std::vector<uint8_t> buffer(4 * DEPTH * SIZE, 0);
    layout.buffer = buffer.data();
    layout.lkey = 3;
    layout.patternSeed = SEED;
    RecordingEngine engine;
    std::vector<std::string> errors;
    VerifyingReceiver rx(engine, layout, [&errors](const std::string& what) {
        errors.push_back(what);
    });
    rx.PostAll();
    ASSERT_EQ(engine.posted.size(), 4u * DEPTH);
    EXPECT_EQ(engine.posted[0].first, 7u);
    EXPECT_EQ(engine.posted[2].second.streamId, 1u);
    EXPECT_EQ(engine.posted[4].first, 9u);
    EXPECT_EQ(engine.posted[5].second.sge.addr,
              reinterpret_cast<uint64_t>(buffer.data() + (2 * DEPTH + 1) * SIZE));
    const DataPattern pattern(SEED, SIZE);
    // Message `seq` of connection index `conn`, stream `stream`, written into its slot.
    auto deliver = [&](uint32_t conn, uint16_t stream, uint64_t seq, bool corrupt) {
        const size_t s = conn * 2 + stream;
        uint8_t* slot = buffer.data() + (s * DEPTH + seq % DEPTH) * SIZE;
        std::memcpy(slot, pattern.Message(conn, stream, seq), SIZE);
        if (corrupt)
        {
            slot[17] ^= 1;
        }
        Completion c;
        c.connectionId = layout.qpns[conn];
        c.streamId = stream;
        c.opcode = WcOpcode::RECV_RDMA_WITH_IMM;
        c.hasImm = true;
        c.immData = uint32_t(seq);
        c.status = WcStatus::SUCCESS;
        return rx.OnCompletion(c);
    };
    EXPECT_TRUE(deliver(0, 0, 0, false));
    EXPECT_TRUE(deliver(0, 0, 1, false));
    EXPECT_TRUE(deliver(1, 1, 0, false));
    EXPECT_EQ(engine.posted.size(), 4u * DEPTH + 3) << "each slot is posted again";
    EXPECT_TRUE(errors.empty()) << errors.front();
    Completion other;
    other.connectionId = 8;
    EXPECT_FALSE(rx.OnCompletion(other)) << "not one of its connections";
    EXPECT_FALSE(rx.Complete()) << "no Finish yet";
    rx.OnFinish({2, 0, 0, 2});
    EXPECT_FALSE(rx.Complete()) << "connection 1 stream 1 has 1 of 2";
    EXPECT_TRUE(deliver(1, 1, 1, true));
    EXPECT_TRUE(rx.Complete());
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0], "connection 1 stream 1 message 1: data differs from byte 17");
    proto::Verdict v = rx.MakeVerdict();
    EXPECT_EQ(v.errors(), 1u);
    EXPECT_EQ(v.messages_verified(), 0u) << "nothing counts as verified with an error";
    EXPECT_EQ(v.first_error(), errors[0]);
    EXPECT_EQ(rx.Messages(), 4u);
    EXPECT_EQ(rx.Bytes(), 4 * SIZE);
}

TEST(HilVerifyTest, VerifyingReceiverVerdictNamesMissingMessagesAndABadFinish)
{
    VerifyingReceiver::Layout layout;
    layout.write = false;
    layout.size = 64;
    layout.depth = 1;
    layout.qpns = {5};
    std::vector<uint8_t> buffer(64, 0);
    layout.buffer = buffer.data();
    RecordingEngine engine;
    std::vector<std::string> errors;
    {
        VerifyingReceiver rx(engine, layout, [&errors](const std::string& w) {
            errors.push_back(w);
        });
        rx.PostAll();
        rx.OnFinish({3});
        EXPECT_FALSE(rx.Complete());
        const proto::Verdict v = rx.MakeVerdict();
        EXPECT_EQ(v.errors(), 1u);
        EXPECT_EQ(v.first_error(), "stream 0: received 0 messages, sender completed 3");
    }
    errors.clear();
    {
        VerifyingReceiver rx(engine, layout, [&errors](const std::string& w) {
            errors.push_back(w);
        });
        rx.OnFinish({1, 1});
        EXPECT_TRUE(rx.Complete()) << "nothing to wait for: the verdict says why";
        ASSERT_FALSE(errors.empty());
        EXPECT_EQ(errors[0], "Finish lists 2 streams, expected 1");
        // (and stream 0's own count: 0 received, 1 listed)
        const proto::Verdict v = rx.MakeVerdict();
        EXPECT_EQ(v.errors(), 2u);
        EXPECT_EQ(v.first_error(), "Finish lists 2 streams, expected 1");
    }
}

/// A ServerEngine that records what the set-up asked of it, and can refuse connection N.
class FakeServerEngine : public ServerEngine
{
  public:
    PostStatus CreateConnection(const ConnectionConfig& cfg,
                                uint32_t& qpn,
                                std::string* why) override
    {
        if (created.size() == refuseAt)
        {
            *why = "no room";
            return PostStatus::QUEUE_FULL;
        }
        qpn = 100 + uint32_t(created.size());
        created.push_back(cfg.sourcePortBase);
        return PostStatus::OK;
    }

    PostStatus Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn) override
    {
        connected.push_back({qpn, peerIp, peerQpn});
        return PostStatus::OK;
    }

    MemoryRegion RegisterMemory(uint8_t* base, uint64_t length, uint32_t access) override
    {
        MemoryRegion mr;
        mr.addr = reinterpret_cast<uint64_t>(base);
        mr.length = length;
        mr.lkey = 9;
        mr.rkey = 10;
        registeredAccess = access;
        return mr;
    }

    PostStatus PostRecv(uint32_t qpn, const RecvWr& wr) override
    {
        posted.emplace_back(qpn, wr);
        return PostStatus::OK;
    }

    std::vector<std::pair<uint32_t, RecvWr>> posted; //!< receives, in order
    std::vector<uint16_t> created;                   //!< source port bases
    std::vector<std::array<uint32_t, 3>> connected;  //!< qpn, peer ip, peer qpn
    uint32_t registeredAccess{0};                    //!< access of the region
    size_t refuseAt{SIZE_MAX};                       //!< refuse this connection
};

/// A checked Hello of \p connections connections, 2 streams, depth 4, 4 KiB WRITEs.
proto::Hello
SetUpHello(uint32_t connections)
{
    proto::Hello hello;
    hello.mutable_address()->set_ipv4(0x0A000002);
    proto::Workload* w = hello.mutable_workload();
    w->set_op("write");
    w->set_message_size(4096);
    w->set_connections(connections);
    w->set_streams(2);
    w->set_depth(4);
    w->set_pattern_seed(3);
    for (uint32_t i = 0; i < connections; ++i)
    {
        hello.add_queue_pairs()->set_qpn(50 + i);
    }
    return hello;
}

// Both servers set up their side of a session with SetUpServerSide(): connection i from
// source port base + 64 i, connected to the client's queue pair i; the region registered
// writable for a WRITE test; every receive posted. A refused connection is reported, and what
// was made is handed back for the teardown.
TEST(HilVerifyTest, SetUpServerSideMakesTheConnectionsRegionAndReceives)
{
    const proto::Hello hello = SetUpHello(3);
    std::vector<uint8_t> buffer(RegionBytes(hello.workload()), 0);
    FakeServerEngine engine;
    ServerSide side;
    ServerEngine& server = engine;
    EXPECT_EQ(SetUpServerSide(server, hello, ConnectionConfig(), 56000, buffer, nullptr, side), "");
    EXPECT_EQ(engine.created, (std::vector<uint16_t>{56000, 56064, 56128}));
    ASSERT_EQ(engine.connected.size(), 3u);
    EXPECT_EQ(engine.connected[2], (std::array<uint32_t, 3>{102, 0x0A000002, 52}));
    EXPECT_EQ(side.qpns, (std::vector<uint32_t>{100, 101, 102}));
    EXPECT_EQ(side.mr.lkey, 9u);
    EXPECT_EQ(engine.registeredAccess, uint32_t(ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE));
    ASSERT_NE(side.receiver, nullptr);
    EXPECT_EQ(engine.posted.size(), 3u * 2 * 4) << "every slot of every stream";

    FakeServerEngine refusing;
    refusing.refuseAt = 1;
    ServerSide partial;
    ServerEngine& refused = refusing;
    const std::string why =
        SetUpServerSide(refused, hello, ConnectionConfig(), 56000, buffer, nullptr, partial);
    EXPECT_EQ(why, "cannot create connection 1: QUEUE_FULL (no room)");
    EXPECT_EQ(partial.qpns, (std::vector<uint32_t>{100})) << "made before the refusal";
    EXPECT_EQ(partial.receiver, nullptr);

    std::vector<uint8_t> small(10);
    ServerSide wrong;
    FakeServerEngine other;
    ServerEngine& otherServer = other;
    EXPECT_NE(SetUpServerSide(otherServer, hello, ConnectionConfig(), 56000, small, nullptr, wrong)
                  .find("the receive region has 10 bytes"),
              std::string::npos);
}

} // namespace
} // namespace hil
} // namespace metaroce
