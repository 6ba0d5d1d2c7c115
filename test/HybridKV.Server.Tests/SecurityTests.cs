using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using HybridKV.Server.Hosting;
using HybridKV.Server.Tests.Support;
using Microsoft.Extensions.Logging.Testing;
using StackExchange.Redis;

namespace HybridKV.Server.Tests;

/// <summary>Loopback by default, the password, TLS, and no secret in any log line or reply.</summary>
[Trait("Category", "Server")]
public sealed class SecurityTests
{
    private const string Password = "correct-horse-battery-staple-42";

    [Fact]
    public async Task The_server_binds_loopback_unless_told_otherwise()
    {
        Assert.Equal("127.0.0.1", new RespServerOptions().BindAddress);
        await using InProcessServer server = await InProcessServer.StartAsync();
        FakeLogRecord listening = Assert.Single(server.Logs.GetSnapshot(), r => r.Id.Id == 1100);
        Assert.Contains($"127.0.0.1:{server.Port}", listening.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_password_is_required_checked_and_never_logged_or_echoed()
    {
        await using InProcessServer server = await InProcessServer.StartAsync(options => options.RequirePass = Password);
        await using (RespClient client = await RespClient.ConnectAsync(server.Port))
        {
            Assert.Equal(new RespError("NOAUTH Authentication required."), await client.CallAsync("GET", "k"));
            Assert.Equal(new RespError("WRONGPASS invalid username-password pair or user is disabled."),
                await client.CallAsync("AUTH", "not-" + Password));
            Assert.Equal(new RespError("WRONGPASS invalid username-password pair or user is disabled."),
                await client.CallAsync("AUTH", "someone", Password));
            Assert.Equal(new RespError("NOAUTH Authentication required."), await client.CallAsync("SET", "k", "v"));
            Assert.Equal("OK", await client.CallAsync("AUTH", Password));
            Assert.Equal("OK", await client.CallAsync("SET", "k", "v"));
        }

        await using (RespClient client = await RespClient.ConnectAsync(server.Port))
        {
            var hello = Assert.IsType<object?[]>(await client.CallAsync("HELLO", "3", "AUTH", "default", Password));
            Assert.Equal("redis", hello[1]);
            Assert.Equal("v", await client.CallAsync("GET", "k"));
        }

        var options = ConfigurationOptions.Parse(server.EndPoint);
        options.Password = Password;
        await using (ConnectionMultiplexer redis = await ConnectionMultiplexer.ConnectAsync(options))
        {
            Assert.Equal("v", await redis.GetDatabase().StringGetAsync("k"));
        }

        IReadOnlyList<FakeLogRecord> logs = server.Logs.GetSnapshot();
        Assert.Contains(logs, r => r.Id.Id == 1103);
        Assert.DoesNotContain(logs, r => r.Message.Contains(Password, StringComparison.Ordinal) ||
            (r.Exception?.ToString().Contains(Password, StringComparison.Ordinal) ?? false) ||
            (r.StructuredState?.Any(p => p.Value?.Contains(Password, StringComparison.Ordinal) ?? false) ?? false));
    }

    [Fact]
    public async Task Tls_connections_work_with_stackexchange_redis()
    {
        using var directory = new TempDirectory();
        string pfx = Path.Combine(directory.Path, "server.pfx");
        string thumbprint;
        using (var key = RSA.Create(2048))
        {
            var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
            using X509Certificate2 certificate = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(1));
            await File.WriteAllBytesAsync(pfx, certificate.Export(X509ContentType.Pfx, "pfx-password"));
            thumbprint = certificate.Thumbprint;
        }

        await using InProcessServer server = await InProcessServer.StartAsync(options =>
        {
            options.TlsCertificatePath = pfx;
            options.TlsCertificatePassword = "pfx-password";
        });
        var options = ConfigurationOptions.Parse(server.EndPoint);
        options.Ssl = true;
        options.SslHost = "localhost";
        // The self-signed certificate made above, and no other.
        options.CertificateValidation += (_, certificate, _, _) =>
            certificate is not null && new X509Certificate2(certificate).Thumbprint == thumbprint;
        await using ConnectionMultiplexer redis = await ConnectionMultiplexer.ConnectAsync(options);
        IDatabase db = redis.GetDatabase();
        await db.StringSetAsync("tls", "yes");
        Assert.Equal("yes", await db.StringGetAsync("tls"));

        // A client that does not speak TLS gets nothing it could read as a reply, and the server goes on.
        await using (RespClient plain = await RespClient.ConnectAsync(server.Port))
        {
            await plain.SendAsync(RespClient.Encode("PING"));
            Assert.True(await plain.IsClosedByServerAsync());
        }

        Assert.Equal("yes", await db.StringGetAsync("tls"));
        Assert.DoesNotContain(server.Logs.GetSnapshot(), r => r.Message.Contains("pfx-password", StringComparison.Ordinal));
    }
}
