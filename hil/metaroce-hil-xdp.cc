/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-xdp.h"

#include <cerrno>
#include <cstring>
#include <iterator>
#include <spdlog/spdlog.h>
#include <vector>

#ifdef METAROCE_HIL_XDP
#include "metaroce-xsk-filter.bpf.h" // the XDP program, embedded by the build

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>
#endif

namespace metaroce
{
namespace hil
{

#ifdef METAROCE_HIL_XDP

namespace
{

/// UMEM chunk size (the largest the kernel takes: one page).
constexpr uint32_t CHUNK = 4096;
/// Chunks for receiving (all in the fill ring at rest) and as many for sending.
constexpr uint32_t RX_CHUNKS = 2048;
/// Chunks for sending.
constexpr uint32_t TX_CHUNKS = 2048;
/// Tries of one Flush(): copy mode sends 32 frames per system call.
constexpr int FLUSH_TRIES = 128;

/// The last warning libbpf printed, for error messages.
std::string g_libbpfMessage;

int
KeepLibbpfMessage(enum libbpf_print_level level, const char* format, va_list args)
{
    if (level == LIBBPF_DEBUG)
    {
        return 0;
    }
    char line[512];
    int n = vsnprintf(line, sizeof(line), format, args);
    g_libbpfMessage.assign(line);
    while (!g_libbpfMessage.empty() && g_libbpfMessage.back() == '\n')
    {
        g_libbpfMessage.pop_back();
    }
    return n;
}

} // namespace

/// The XDP program attached to one interface, and its maps.
class XdpProgram
{
  public:
    ~XdpProgram()
    {
        if (link >= 0)
        {
            close(link); // detaches the program
        }
        if (object)
        {
            bpf_object__close(object);
        }
    }

    bpf_object* object{nullptr};    //!< the XDP program and its maps
    int link{-1};                   //!< the BPF link that attaches the program
    int xsksFd{-1};                 //!< its XSKMAP (queue -> socket)
    XdpMode mode{XdpMode::GENERIC}; //!< how the program is attached and the sockets bound
    bool frags{false};              //!< the program is the xdp.frags entry point
};

/// The libxdp state of one socket.
class XdpSocket::Impl
{
  public:
    ~Impl()
    {
        if (xsk)
        {
            xsk_socket__delete(xsk);
        }
        if (umem)
        {
            xsk_umem__delete(umem);
        }
        if (area != MAP_FAILED)
        {
            munmap(area, size_t(CHUNK) * (RX_CHUNKS + TX_CHUNKS));
        }
    }

    /// \return the chunk at UMEM address \p addr.
    uint8_t* Data(uint64_t addr) const
    {
        return static_cast<uint8_t*>(xsk_umem__get_data(area, addr));
    }

    /// Move sent frames' chunks back to the free list.
    void Reclaim()
    {
        uint32_t idx = 0;
        const uint32_t n = xsk_ring_cons__peek(&comp, TX_CHUNKS, &idx);
        for (uint32_t i = 0; i < n; ++i)
        {
            freeTx.push_back(*xsk_ring_cons__comp_addr(&comp, idx + i));
        }
        xsk_ring_cons__release(&comp, n);
    }

    std::shared_ptr<XdpProgram> program; //!< the attached program (released after the socket)
    std::string ifname;                  //!< interface
    int ifindex{0};                      //!< its index
    uint32_t queue{0};                   //!< the queue the socket is bound to
    void* area{MAP_FAILED};              //!< UMEM
    xsk_umem* umem{nullptr};             //!< UMEM registration
    xsk_socket* xsk{nullptr};            //!< the socket
    xsk_ring_prod fill{};                //!< chunks given to the kernel to receive into
    xsk_ring_cons comp{};                //!< chunks the kernel has sent
    xsk_ring_cons rx{};                  //!< received frames
    xsk_ring_prod tx{};                  //!< frames to send
    std::vector<uint64_t> freeTx;        //!< chunks free for sending
    std::vector<uint64_t> refill;        //!< Receive() scratch
    uint32_t pending{0};                 //!< frames submitted, not yet kicked
    uint64_t droppedBefore{0};           //!< XDP_STATISTICS drops already reported
};

namespace
{

/// The ways of attaching, in the order XdpSocket::Open() tries them. XdpMode::AUTO takes the
/// zero-copy and the generic ones only: on a veth pair native XDP in copy mode moved 0.70-1.12x
/// (median 0.85x) generic XDP's goodput (docs/benchmarks-hil.md), as the frame then crosses the
/// veth's own queue and NAPI run; it is there when asked for (a NIC without zero-copy may gain from
/// it).
struct Attempt
{
    XdpMode mode; //!< ZEROCOPY, NATIVE or GENERIC
    bool frags;   //!< the xdp.frags entry point (native XDP on a link whose MTU exceeds a page)
};

constexpr Attempt ATTEMPTS[] = {
    {XdpMode::ZEROCOPY, false},
    {XdpMode::ZEROCOPY, true},
    {XdpMode::NATIVE, false},
    {XdpMode::NATIVE, true},
    {XdpMode::GENERIC, false},
};

} // namespace

std::unique_ptr<XdpSocket>
XdpSocket::Open(const std::string& ifname,
                int ifindex,
                uint16_t dataPort,
                XdpMode mode,
                uint32_t queue,
                std::shared_ptr<XdpProgram>& program,
                std::string& error)
{
    libbpf_set_print(KeepLibbpfMessage);
    std::string reasons;
    bool driverRefused = false; // the driver refused native XDP or the zero-copy bind
    bool notPermitted = false;  // a call was refused for want of privileges
    bool tryFrags = false;      // the plain entry point's attach was refused in this mode
    // Another queue of an interface whose program this process attached: bind the same way.
    const Attempt same[] = {{program ? program->mode : mode, program && program->frags}};
    const Attempt* attempts = program ? same : ATTEMPTS;
    const size_t count = program ? std::size(same) : std::size(ATTEMPTS);
    for (size_t i = 0; i < count; ++i)
    {
        const Attempt& attempt = attempts[i];
        if (!program &&
            (mode == XdpMode::AUTO ? attempt.mode == XdpMode::NATIVE : mode != attempt.mode))
        {
            continue;
        }
        // The xdp.frags entry point only where the driver refused to attach the plain one (a
        // veth whose MTU exceeds a page): on a NIC each attach and detach may reset its rings.
        if (!program && attempt.frags && !tryFrags)
        {
            continue;
        }
        std::string why;
        XdpStage failedAt = XdpStage::NONE;
        int err = 0;
        std::unique_ptr<Impl> impl = TryOpen(ifname,
                                             ifindex,
                                             dataPort,
                                             attempt.mode,
                                             attempt.frags,
                                             queue,
                                             program,
                                             why,
                                             failedAt,
                                             err);
        if (impl)
        {
            program = impl->program;
            if (!reasons.empty())
            {
                spdlog::info("AF_XDP on {}: {} (passed over: {})",
                             ifname,
                             XdpModeName(attempt.mode),
                             reasons);
            }
            return std::unique_ptr<XdpSocket>(new XdpSocket(std::move(impl)));
        }
        reasons += std::string(reasons.empty() ? "" : "; ") + XdpModeName(attempt.mode) +
                   (attempt.frags ? " (xdp.frags)" : "") + ": " + why;
        notPermitted = notPermitted || err == EPERM || err == EACCES;
        const bool otherCause =
            err == EBUSY || err == EEXIST || err == EPERM || err == EACCES || err == ENOMEM;
        tryFrags = !attempt.frags && failedAt == XdpStage::ATTACH && !otherCause;
        if (!otherCause && (failedAt == XdpStage::ATTACH ||
                            (failedAt == XdpStage::BIND && attempt.mode == XdpMode::ZEROCOPY)))
        {
            driverRefused = true;
        }
    }
    error = "AF_XDP on " + ifname + ": " + reasons;
    if (notPermitted)
    {
        error += ". AF_XDP needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or CAP_SYS_ADMIN): run "
                 "as root, or use --raw-io ring";
    }
    else if (driverRefused && mode != XdpMode::AUTO && mode != XdpMode::GENERIC)
    {
        error += std::string(". --xdp-mode ") + XdpModeName(mode) +
                 " needs a driver with native XDP" +
                 (mode == XdpMode::ZEROCOPY ? " and AF_XDP zero-copy" : "") +
                 "; --xdp-mode generic works on every interface";
    }
    return nullptr;
}

std::unique_ptr<XdpSocket::Impl>
XdpSocket::TryOpen(const std::string& ifname,
                   int ifindex,
                   uint16_t dataPort,
                   XdpMode mode,
                   bool frags,
                   uint32_t queue,
                   std::shared_ptr<XdpProgram> program,
                   std::string& error,
                   XdpStage& failedAt,
                   int& failedErrno)
{
    auto impl = std::make_unique<Impl>();
    impl->ifname = ifname;
    impl->ifindex = ifindex;
    impl->queue = queue;
    failedAt = XdpStage::SETUP;
    auto fail = [&](const std::string& what, int err) {
        failedErrno = err;
        error = what + ": " + std::strerror(err);
        if (!g_libbpfMessage.empty())
        {
            error += " (libbpf: " + g_libbpfMessage + ")";
        }
        return nullptr;
    };
    g_libbpfMessage.clear();
    const uint32_t xdpFlags = mode == XdpMode::GENERIC ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
    if (!program)
    {
        program = std::make_shared<XdpProgram>();
        program->mode = mode;
        program->frags = frags;
        program->object = bpf_object__open_mem(METAROCE_XSK_FILTER_OBJECT,
                                               sizeof(METAROCE_XSK_FILTER_OBJECT),
                                               nullptr);
        if (!program->object)
        {
            return fail("opening the XDP program", errno);
        }
        // Load only this attempt's entry point: a kernel without multi-buffer XDP (before 5.18)
        // refuses an xdp.frags program, and the object's load would fail with it.
        if (bpf_program* unused = bpf_object__find_program_by_name(
                program->object,
                frags ? "metaroce_xsk_filter" : "metaroce_xsk_filter_frags"))
        {
            bpf_program__set_autoload(unused, false);
        }
        if (int err = bpf_object__load(program->object); err != 0)
        {
            return fail("loading the XDP program", -err);
        }
        bpf_program* prog = bpf_object__find_program_by_name(program->object,
                                                             frags ? "metaroce_xsk_filter_frags"
                                                                   : "metaroce_xsk_filter");
        const int configFd = bpf_object__find_map_fd_by_name(program->object, "config");
        program->xsksFd = bpf_object__find_map_fd_by_name(program->object, "xsks_map");
        if (!prog || configFd < 0 || program->xsksFd < 0)
        {
            return fail("the embedded XDP program lacks its program or maps", EINVAL);
        }
        const uint32_t key = 0;
        const uint32_t port = dataPort;
        if (bpf_map_update_elem(configFd, &key, &port, BPF_ANY) != 0)
        {
            return fail("setting the data port", errno);
        }
        // A BPF link never replaces another program, and the kernel detaches ours when the
        // link's descriptor closes, also when the process dies. Generic (SKB) mode: every
        // driver has it, veth included; native (driver) mode: the driver's own XDP hook.
        LIBBPF_OPTS(bpf_link_create_opts, linkOptions, .flags = xdpFlags);
        failedAt = XdpStage::ATTACH;
        program->link = bpf_link_create(bpf_program__fd(prog), ifindex, BPF_XDP, &linkOptions);
        if (program->link < 0)
        {
            const int err = errno;
            if (err == EBUSY || err == EEXIST)
            {
                return fail("attaching the XDP program (the interface has one already)", err);
            }
            return fail(mode == XdpMode::GENERIC
                            ? std::string("attaching the XDP program")
                            : std::string("attaching the XDP program in the driver (native XDP)"),
                        err);
        }
    }
    impl->program = program;
    failedAt = XdpStage::SETUP;
    const size_t bytes = size_t(CHUNK) * (RX_CHUNKS + TX_CHUNKS);
    impl->area = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (impl->area == MAP_FAILED)
    {
        return fail("UMEM memory", errno);
    }
    xsk_umem_config ucfg{};
    ucfg.fill_size = RX_CHUNKS;
    ucfg.comp_size = TX_CHUNKS;
    ucfg.frame_size = CHUNK;
    ucfg.frame_headroom = 0;
    if (int err = xsk_umem__create(&impl->umem, impl->area, bytes, &impl->fill, &impl->comp, &ucfg);
        err != 0)
    {
        impl->umem = nullptr;
        return fail("UMEM registration", -err);
    }
    xsk_socket_config scfg{};
    scfg.rx_size = RX_CHUNKS;
    scfg.tx_size = TX_CHUNKS;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD; // ours is attached already
    scfg.xdp_flags = xdpFlags;
    scfg.bind_flags = (mode == XdpMode::ZEROCOPY ? XDP_ZEROCOPY : XDP_COPY) | XDP_USE_NEED_WAKEUP;
    failedAt = XdpStage::BIND;
    if (int err = xsk_socket__create(&impl->xsk,
                                     ifname.c_str(),
                                     queue,
                                     impl->umem,
                                     &impl->rx,
                                     &impl->tx,
                                     &scfg);
        err != 0)
    {
        impl->xsk = nullptr;
        const std::string q = "queue " + std::to_string(queue);
        return fail(mode == XdpMode::ZEROCOPY
                        ? "a zero-copy socket on " + q + " (the driver's AF_XDP zero-copy support)"
                        : "socket on " + q,
                    -err);
    }
    failedAt = XdpStage::SETUP;
    if (int err = xsk_socket__update_xskmap(impl->xsk, program->xsksFd); err != 0)
    {
        return fail("registering the socket with the XDP program", -err);
    }
    // Every receive chunk to the kernel; the rest free for sending.
    uint32_t idx = 0;
    if (xsk_ring_prod__reserve(&impl->fill, RX_CHUNKS, &idx) != RX_CHUNKS)
    {
        return fail("filling the fill ring", ENOMEM);
    }
    for (uint32_t i = 0; i < RX_CHUNKS; ++i)
    {
        *xsk_ring_prod__fill_addr(&impl->fill, idx + i) = uint64_t(i) * CHUNK;
    }
    xsk_ring_prod__submit(&impl->fill, RX_CHUNKS);
    impl->freeTx.reserve(TX_CHUNKS);
    for (uint32_t i = 0; i < TX_CHUNKS; ++i)
    {
        impl->freeTx.push_back(uint64_t(RX_CHUNKS + i) * CHUNK);
    }
    impl->refill.reserve(RX_CHUNKS);
    failedAt = XdpStage::NONE;
    return impl;
}

XdpMode
XdpSocket::Mode() const
{
    return m_impl->program->mode;
}

int
XdpSocket::Fd() const
{
    return xsk_socket__fd(m_impl->xsk);
}

size_t
XdpSocket::Receive(size_t maxFrames, const FrameVisitor& visit)
{
    Impl& s = *m_impl;
    uint32_t idx = 0;
    const uint32_t n =
        xsk_ring_cons__peek(&s.rx, uint32_t(std::min<size_t>(maxFrames, RX_CHUNKS)), &idx);
    s.refill.clear();
    for (uint32_t i = 0; i < n; ++i)
    {
        const xdp_desc* d = xsk_ring_cons__rx_desc(&s.rx, idx + i);
        RingFrame f;
        f.data = s.Data(d->addr);
        f.length = d->len;
        f.wireLength = d->len;
        f.packetType = PACKET_HOST; // the XDP program sees only frames arriving
        visit(f);
        s.refill.push_back(d->addr & ~uint64_t(CHUNK - 1));
    }
    xsk_ring_cons__release(&s.rx, n);
    // Give the chunks back to the kernel (the fill ring has room for every receive chunk).
    if (n > 0 && xsk_ring_prod__reserve(&s.fill, n, &idx) == n)
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            *xsk_ring_prod__fill_addr(&s.fill, idx + i) = s.refill[i];
        }
        xsk_ring_prod__submit(&s.fill, n);
    }
    // A zero-copy driver may wait for a system call before it uses the new fill entries.
    if (xsk_ring_prod__needs_wakeup(&s.fill))
    {
        recvfrom(Fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    }
    return n;
}

uint8_t*
XdpSocket::TxSlot()
{
    Impl& s = *m_impl;
    if (s.freeTx.empty())
    {
        s.Reclaim();
    }
    return s.freeTx.empty() ? nullptr : s.Data(s.freeTx.back());
}

void
XdpSocket::TxCommit(uint32_t length)
{
    Impl& s = *m_impl;
    uint32_t idx = 0;
    // The transmit ring has a descriptor for every transmit chunk, so there is room.
    if (xsk_ring_prod__reserve(&s.tx, 1, &idx) != 1)
    {
        return;
    }
    xdp_desc* d = xsk_ring_prod__tx_desc(&s.tx, idx);
    d->addr = s.freeTx.back();
    d->len = length;
    s.freeTx.pop_back();
    xsk_ring_prod__submit(&s.tx, 1);
    ++s.pending;
}

uint32_t
XdpSocket::TxPending() const
{
    return m_impl->pending;
}

int
XdpSocket::Flush(int /*fd*/)
{
    Impl& s = *m_impl;
    if (s.pending == 0)
    {
        return 0;
    }
    for (int i = 0; i < FLUSH_TRIES; ++i)
    {
        if (!xsk_ring_prod__needs_wakeup(&s.tx) ||
            sendto(Fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0)
        {
            s.pending = 0;
            s.Reclaim();
            return 0;
        }
        if (errno != EAGAIN && errno != EBUSY)
        {
            return errno == ENOBUFS ? ENOBUFS : errno;
        }
    }
    s.Reclaim();
    return EAGAIN;
}

uint64_t
XdpSocket::ReadDrops(int /*fd*/)
{
    xdp_statistics stats{};
    socklen_t len = sizeof(stats);
    if (getsockopt(Fd(), SOL_XDP, XDP_STATISTICS, &stats, &len) != 0)
    {
        return 0;
    }
    const uint64_t total = stats.rx_dropped + stats.rx_ring_full;
    const uint64_t fresh = total - m_impl->droppedBefore;
    m_impl->droppedBefore = total;
    return fresh;
}

std::string
XdpSocket::Describe() const
{
    const Impl& s = *m_impl;
    const XdpMode mode = s.program->mode;
    const char* how = mode == XdpMode::ZEROCOPY ? "AF_XDP zero-copy (native XDP"
                      : mode == XdpMode::NATIVE ? "AF_XDP copy mode (native XDP"
                                                : "AF_XDP copy mode (generic XDP";
    return std::string(how) + (s.program->frags ? ", xdp.frags program" : "") + ") queue " +
           std::to_string(s.queue) + ", UMEM " + std::to_string(RX_CHUNKS) + "+" +
           std::to_string(TX_CHUNKS) + " x 4 KiB, frames up to " + std::to_string(XDP_MAX_FRAME);
}

#else // no AF_XDP in this build

class XdpProgram
{
};

class XdpSocket::Impl
{
};

std::unique_ptr<XdpSocket>
XdpSocket::Open(const std::string& ifname,
                int,
                uint16_t,
                XdpMode,
                uint32_t,
                std::shared_ptr<XdpProgram>&,
                std::string& error)
{
    error = "AF_XDP on " + ifname +
            ": this build has no AF_XDP support (it needs libxdp-dev, libbpf-dev and clang at "
            "configure time); use --raw-io ring";
    return nullptr;
}

int
XdpSocket::Fd() const
{
    return -1;
}

size_t
XdpSocket::Receive(size_t, const FrameVisitor&)
{
    return 0;
}

uint8_t*
XdpSocket::TxSlot()
{
    return nullptr;
}

void
XdpSocket::TxCommit(uint32_t)
{
}

uint32_t
XdpSocket::TxPending() const
{
    return 0;
}

int
XdpSocket::Flush(int)
{
    return EINVAL;
}

uint64_t
XdpSocket::ReadDrops(int)
{
    return 0;
}

std::string
XdpSocket::Describe() const
{
    return "AF_XDP (not built)";
}

XdpMode
XdpSocket::Mode() const
{
    return XdpMode::GENERIC;
}

#endif

bool
ParseXdpMode(const std::string& text, XdpMode& mode)
{
    for (XdpMode m : {XdpMode::AUTO, XdpMode::ZEROCOPY, XdpMode::NATIVE, XdpMode::GENERIC})
    {
        if (text == XdpModeName(m))
        {
            mode = m;
            return true;
        }
    }
    return false;
}

const char*
XdpModeName(XdpMode mode)
{
    switch (mode)
    {
    case XdpMode::AUTO:
        return "auto";
    case XdpMode::ZEROCOPY:
        return "zerocopy";
    case XdpMode::NATIVE:
        return "native";
    case XdpMode::GENERIC:
        return "generic";
    }
    return "?";
}

XdpSocket::XdpSocket(std::unique_ptr<Impl> impl)
    : m_impl(std::move(impl))
{
}

XdpSocket::~XdpSocket() = default;

} // namespace hil
} // namespace metaroce
