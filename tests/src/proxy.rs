//! A loopback TCP proxy the tests can cut: a service's connection to etcd goes away (and new
//! ones are refused) while the test keeps its own direct connection, as in a partition between
//! one client and etcd.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::{net::TcpListener, task::AbortHandle};

/// See the module docs. Dropping it stops the proxy and every connection through it.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    open: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    /// Forwards connections on a free loopback port to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let open = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accept = {
            let (open, conns) = (open.clone(), conns.clone());
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        continue; // dropped: refused while cut
                    }
                    let conn = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    if let Ok(mut c) = conns.lock() {
                        c.push(conn.abort_handle());
                    }
                }
            })
            .abort_handle()
        };
        Self {
            addr,
            open,
            conns,
            accept,
        }
    }

    /// Closes every connection through the proxy and refuses new ones until [`Self::restore`].
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        if let Ok(mut c) = self.conns.lock() {
            for conn in c.drain(..) {
                conn.abort();
            }
        }
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}
