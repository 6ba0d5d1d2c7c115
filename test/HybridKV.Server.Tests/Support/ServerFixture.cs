namespace HybridKV.Server.Tests.Support;

/// <summary>One in-process server shared by the tests of a class (each test uses keys of its own).</summary>
public sealed class ServerFixture : IAsyncLifetime
{
    private InProcessServer? _server;

    public InProcessServer Server => _server ?? throw new InvalidOperationException("Not started.");

    public async Task InitializeAsync() => _server = await InProcessServer.StartAsync();

    public async Task DisposeAsync()
    {
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}
