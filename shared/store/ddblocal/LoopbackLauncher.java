import java.lang.reflect.Field;
import java.util.Arrays;

/**
 * Starts AWS DynamoDB Local listening on one address instead of every
 * interface. DynamoDB Local has no option for it (its Jetty connector binds
 * the wildcard address), and it holds every organisation's data, key hashes
 * and webhook secrets, so the local runtimes start it through this class:
 * it builds the server as DynamoDB Local's own main does, sets the host of
 * each of its connectors, and starts it. Arguments: the host, then DynamoDB
 * Local's own arguments. It uses reflection only, so it compiles without
 * the engine's jar (ddblocal compiles it once per machine, --release 17).
 */
public final class LoopbackLauncher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: LoopbackLauncher <host> [DynamoDB Local arguments]");
        }
        String host = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        Class<?> runner = Class.forName("software.amazon.dynamodb.services.local.main.ServerRunner");
        Object proxy = runner.getMethod("createServerFromCommandLineArgs", String[].class).invoke(null, (Object) rest);
        Field field = proxy.getClass().getDeclaredField("server");
        field.setAccessible(true);
        Object jetty = field.get(proxy);
        Object[] connectors = (Object[]) jetty.getClass().getMethod("getConnectors").invoke(jetty);
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local built no connector to bind to " + host);
        }
        for (Object c : connectors) {
            c.getClass().getMethod("setHost", String.class).invoke(c, host);
        }
        proxy.getClass().getMethod("start").invoke(proxy);
    }
}
