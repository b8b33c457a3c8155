/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_XDP_H
#define METAROCE_HIL_XDP_H

#include "metaroce-hil-packet-ring.h"

#include <memory>
#include <string>

/**
 * \file
 * The raw port's AF_XDP backend (--raw-io xdp): an AF_XDP socket on one receive queue of the
 * interface, through libxdp's xsk API, and a small XDP program of our own (hil/bpf/, loaded with
 * libbpf) that hands IPv4/UDP datagrams to the data port to the socket of the queue they arrived
 * on and passes everything else (ARP, the TCP control plane) to the kernel. The engine shards of
 * --threads share one attached program (XdpProgram) and each bind a socket to their own queue.
 * Three ways to attach (XdpMode): zero-copy in the driver's own XDP where the driver supports
 * AF_XDP zero-copy, copy mode in the driver's own (native) XDP, and copy mode in generic (SKB) XDP,
 * which every interface has, veth included. The default takes zero-copy where the driver has it,
 * else generic XDP. Frames are at most one 4 KiB UMEM chunk less the kernel's headroom.
 */

namespace metaroce
{
namespace hil
{

/// How the AF_XDP backend attaches to the interface.
enum class XdpMode : uint8_t
{
    AUTO,     //!< ZEROCOPY where the driver has it, else GENERIC
    ZEROCOPY, //!< native XDP, the socket bound with XDP_ZEROCOPY (the driver's AF_XDP support)
    NATIVE,   //!< native (driver) XDP, the socket in copy mode
    GENERIC,  //!< generic (SKB) XDP, the socket in copy mode: every interface
};

/// Parse "auto", "zerocopy", "native" or "generic". \return false if it is none of them.
bool ParseXdpMode(const std::string& text, XdpMode& mode);

/// \return the name ParseXdpMode() reads for \p mode.
const char* XdpModeName(XdpMode mode);

/// Largest frame the AF_XDP backend carries (a 4 KiB UMEM chunk less XDP_PACKET_HEADROOM).
constexpr uint32_t XDP_MAX_FRAME = 4096 - 256;

/// The XDP program attached to an interface, shared by the sockets of its queues.
class XdpProgram;

/// An AF_XDP socket with its UMEM, on one queue, as a FrameRing.
class XdpSocket : public FrameRing
{
  public:
    /**
     * Open an AF_XDP socket on queue \p queue of \p ifname. Without \p program, attach the XDP
     * program first and set \p program to it; with it (the program another socket of this
     * process attached to the same interface), bind the way that socket did and register with
     * it. The program stays attached while a socket holds it.
     * \param dataPort UDP port whose datagrams go to the socket
     * \param mode how to attach; XdpMode::AUTO tries each way in turn and logs (at info) why
     *        each one it passed over was refused (ignored with \p program)
     * \param queue the receive (and transmit) queue to bind
     * \param[in,out] program the attached program, or nullptr to attach one
     * \param[out] error why it failed (not built, no privileges, another XDP program, a driver
     *        without native XDP or zero-copy, no such queue, ...; for AUTO, every way's reason)
     * \return the socket, or nullptr
     */
    static std::unique_ptr<XdpSocket> Open(const std::string& ifname,
                                           int ifindex,
                                           uint16_t dataPort,
                                           XdpMode mode,
                                           uint32_t queue,
                                           std::shared_ptr<XdpProgram>& program,
                                           std::string& error);

    /// \return the way the socket is attached (never XdpMode::AUTO).
    XdpMode Mode() const;

    /// Detach the program and release the socket and its memory.
    ~XdpSocket() override;
    XdpSocket(const XdpSocket&) = delete;
    XdpSocket& operator=(const XdpSocket&) = delete;

    /// \return the socket's descriptor (owned by the socket: dup() it to poll elsewhere).
    int Fd() const;

    size_t Receive(size_t maxFrames, const FrameVisitor& visit) override;

    uint32_t TxSlotBytes() const override
    {
        return XDP_MAX_FRAME;
    }

    uint8_t* TxSlot() override;
    void TxCommit(uint32_t length) override;
    uint32_t TxPending() const override;
    /// sendto() on the socket, repeated while the kernel sends in batches of 32.
    int Flush(int fd) override;
    /// XDP_STATISTICS: frames dropped (no room in the receive or fill ring).
    uint64_t ReadDrops(int fd) override;
    std::string Describe() const override;

  private:
    class Impl;
    explicit XdpSocket(std::unique_ptr<Impl> impl);
    /// Where an attempt of TryOpen() failed.
    enum class XdpStage : uint8_t
    {
        NONE,   //!< it did not
        SETUP,  //!< loading the program, its maps, the UMEM, the rings
        ATTACH, //!< attaching the program to the interface
        BIND,   //!< creating and binding the socket
    };
    /**
     * One way of attaching (\p mode not AUTO; \p frags: the xdp.frags entry point), and a
     * socket on \p queue; with \p program, that program (attached already) instead.
     * \param[out] error why it failed
     * \param[out] failedAt where it failed
     * \param[out] failedErrno the refusing call's error number
     * \return the socket's state, or nullptr (then nothing stays attached)
     */
    static std::unique_ptr<Impl> TryOpen(const std::string& ifname,
                                         int ifindex,
                                         uint16_t dataPort,
                                         XdpMode mode,
                                         bool frags,
                                         uint32_t queue,
                                         std::shared_ptr<XdpProgram> program,
                                         std::string& error,
                                         XdpStage& failedAt,
                                         int& failedErrno);
    std::unique_ptr<Impl> m_impl; //!< libxdp state (absent from builds without AF_XDP)
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_XDP_H
