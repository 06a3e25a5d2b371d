// Reference scenario for `scripts/bench-vs-ns3.sh`: ns-3 simulates a TCP bulk transfer of
// BYTES over an 8 Gb/s point-to-point link (1 us delay, 2 KiB segments) and prints the
// data packets it simulated per wall-clock second. interlab's model runs the equivalent
// RC transfer over a 4X SDR (8 Gb/s data) link in the same script run.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace ns3;

int main(int argc, char* argv[]) {
    uint64_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000000ULL;
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(2048));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 24));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 24));
    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("8Gbps"));
    p2p.SetChannelAttribute("Delay", StringValue("1us"));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(2048 + 52));
    NetDeviceContainer devs = p2p.Install(nodes);
    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    uint16_t port = 9;
    BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    source.SetAttribute("MaxBytes", UintegerValue(bytes));
    source.SetAttribute("SendSize", UintegerValue(65536));
    ApplicationContainer src = source.Install(nodes.Get(0));
    src.Start(Seconds(0.0));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer dst = sink.Install(nodes.Get(1));
    dst.Start(Seconds(0.0));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t rx = DynamicCast<PacketSink>(dst.Get(0))->GetTotalRx();
    double packets = double(rx) / 2048.0;
    std::printf("ns3 bytes=%llu packets=%.0f wall_s=%.3f packets_per_s=%.0f\n", (unsigned long long)rx, packets, wall, packets / wall);
    Simulator::Destroy();
    return 0;
}
