using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Net.Sockets;
using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>
/// The sample counter service (samples/CounterService) over real HTTP: in process through WebApplicationFactory on
/// Kestrel, and as a process killed with SIGKILL under load, after which every acknowledged increment is there.
/// </summary>
[Trait("Category", "Hosting")]
public sealed class CounterServiceTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private sealed record CounterValue(long Id, long Count);

    private static WebApplicationFactory<Program> Service(string directory)
    {
        var factory = new WebApplicationFactory<Program>().WithWebHostBuilder(builder =>
        {
            builder.UseSetting("HybridKV:Directory", directory);
            builder.UseSetting("HybridKV:SessionPoolSize", "8");
            builder.UseSetting("HybridKV:MemorySizeBytes", (1 << 24).ToString(System.Globalization.CultureInfo.InvariantCulture));
        });
        factory.UseKestrel(0);
        factory.StartServer();
        return factory;
    }

    [Fact]
    public async Task Durable_increments_over_http_are_counted_and_survive_a_restart()
    {
        string directory = _directory.NewSubdirectory();
        await using (WebApplicationFactory<Program> service = Service(directory))
        {
            using HttpClient client = service.CreateClient();
            Assert.Equal(HttpStatusCode.OK, (await client.GetAsync(new Uri("/health", UriKind.Relative))).StatusCode);
            HttpResponseMessage[] responses = await Task.WhenAll(Enumerable.Range(0, 40).Select(i =>
                client.PostAsync(new Uri($"/counters/{i % 4}?by=2", UriKind.Relative), null)));
            Assert.All(responses, r => Assert.Equal(HttpStatusCode.NoContent, r.StatusCode));
            CounterValue? value = await client.GetFromJsonAsync<CounterValue>(new Uri("/counters/3", UriKind.Relative));
            Assert.Equal(new CounterValue(3, 20), value);
        }

        await using WebApplicationFactory<Program> restarted = Service(directory);
        using HttpClient again = restarted.CreateClient();
        for (int id = 0; id < 4; id++)
        {
            CounterValue? value = await again.GetFromJsonAsync<CounterValue>(new Uri($"/counters/{id}", UriKind.Relative));
            Assert.Equal(20, value!.Count);
        }
    }

    [Fact]
    public async Task Every_acknowledged_increment_survives_killing_the_service_under_load()
    {
        string directory = _directory.NewSubdirectory();
        const int Clients = 16;
        var acknowledged = new long[Clients];
        var sent = new long[Clients];
        long acknowledgedInAll = 0;
        var fewHundredAcknowledged = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using (ServiceProcess service = await ServiceProcess.StartAsync(directory))
        {
            using var http = new HttpClient { BaseAddress = service.Address };
            using var stop = new CancellationTokenSource();
            Task[] clients = Enumerable.Range(0, Clients).Select(id => Task.Run(async () =>
            {
                // Bounded: at most 10,000 requests per client, and stopped by the kill.
                for (int i = 0; i < 10_000 && !stop.IsCancellationRequested; i++)
                {
                    Interlocked.Increment(ref sent[id]);
                    try
                    {
                        using HttpResponseMessage response = await http.PostAsync(
                            new Uri($"/counters/{id}", UriKind.Relative), null, stop.Token);
                        if (response.StatusCode == HttpStatusCode.NoContent)
                        {
                            Interlocked.Increment(ref acknowledged[id]);
                            if (Interlocked.Increment(ref acknowledgedInAll) == 300)
                            {
                                fewHundredAcknowledged.SetResult();
                            }
                        }
                    }
                    catch (Exception error) when (error is HttpRequestException or OperationCanceledException)
                    {
                        return;
                    }
                }
            })).ToArray();

            // Kill it in the middle of the load, once a few hundred increments were acknowledged.
            await fewHundredAcknowledged.Task.WaitAsync(TimeSpan.FromMinutes(2));

            service.Kill();
            await stop.CancelAsync();
            await Task.WhenAll(clients);
        }

        Assert.True(acknowledged.Sum() >= 300);
        using ServiceProcess restarted = await ServiceProcess.StartAsync(directory);
        using var reader = new HttpClient { BaseAddress = restarted.Address };
        for (int id = 0; id < Clients; id++)
        {
            CounterValue? value = await reader.GetFromJsonAsync<CounterValue>(new Uri($"/counters/{id}", UriKind.Relative));
            Assert.InRange(value!.Count, acknowledged[id], sent[id]);
        }
    }

    /// <summary>The sample service's build output, run with <c>dotnet</c> as a child process on a free loopback port.</summary>
    private sealed class ServiceProcess : IDisposable
    {
        private readonly Process _process;

        private ServiceProcess(Process process, Uri address)
        {
            _process = process;
            Address = address;
        }

        public Uri Address { get; }

        public static async Task<ServiceProcess> StartAsync(string directory)
        {
            int port;
            using (var probe = new TcpListener(IPAddress.Loopback, 0))
            {
                probe.Start();
                port = ((IPEndPoint)probe.LocalEndpoint).Port;
            }

            var start = new ProcessStartInfo("dotnet")
            {
                WorkingDirectory = directory,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "CounterService.dll"));
            start.ArgumentList.Add($"--urls=http://127.0.0.1:{port}");
            start.ArgumentList.Add($"--HybridKV:Directory={Path.Combine(directory, "data")}");
            start.ArgumentList.Add("--HybridKV:MemorySizeBytes=16777216");
            start.ArgumentList.Add("--Logging:LogLevel:Default=Warning");
            var process = Process.Start(start)!;
            process.OutputDataReceived += (_, _) => { };
            process.ErrorDataReceived += (_, _) => { };
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            var service = new ServiceProcess(process, new Uri($"http://127.0.0.1:{port}"));

            // Ready once the health check answers: the store is recovered before the server listens.
            using var http = new HttpClient { BaseAddress = service.Address };
            using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(1));
            while (true)
            {
                Assert.False(process.HasExited, $"The service exited with code {(process.HasExited ? process.ExitCode : 0)}.");
                try
                {
                    using HttpResponseMessage health = await http.GetAsync(new Uri("/health", UriKind.Relative), deadline.Token);
                    Assert.Equal(HttpStatusCode.OK, health.StatusCode);
                    return service;
                }
                catch (HttpRequestException)
                {
                    await Task.Delay(50, deadline.Token);
                }
            }
        }

        /// <summary>SIGKILL: no shutdown, no final checkpoint, no disposal.</summary>
        public void Kill()
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: false);
                _process.WaitForExit();
            }
        }

        public void Dispose()
        {
            Kill();
            _process.Dispose();
        }
    }
}
