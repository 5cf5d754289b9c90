package ec2sim

// XML shapes of DescribeInstances, DescribeInstanceTypes and DescribeSubnets.

type describeInstancesResp struct {
	respMeta
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

type instanceXML struct {
	InstanceID        string       `xml:"instanceId"`
	ImageID           string       `xml:"imageId"`
	State             stateXML     `xml:"instanceState"`
	PrivateDNSName    string       `xml:"privateDnsName"`
	InstanceType      string       `xml:"instanceType"`
	LaunchTime        string       `xml:"launchTime"`
	Placement         placementXML `xml:"placement"`
	SubnetID          string       `xml:"subnetId"`
	VpcID             string       `xml:"vpcId"`
	PrivateIPAddress  string       `xml:"privateIpAddress"`
	SourceDestCheck   bool         `xml:"sourceDestCheck"`
	Groups            []groupXML   `xml:"groupSet>item"`
	Architecture      string       `xml:"architecture"`
	Hypervisor        string       `xml:"hypervisor"`
	NetworkInterfaces []niXML      `xml:"networkInterfaceSet>item"`
	Tags              []tagXML     `xml:"tagSet>item"`
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type placementXML struct {
	AvailabilityZone string `xml:"availabilityZone"`
	Tenancy          string `xml:"tenancy"`
}

type describeInstanceTypesResp struct {
	respMeta
	InstanceTypes []instanceTypeXML `xml:"instanceTypeSet>item"`
	NextToken     string            `xml:"nextToken,omitempty"`
}

type instanceTypeXML struct {
	InstanceType      string         `xml:"instanceType"`
	CurrentGeneration bool           `xml:"currentGeneration"`
	BareMetal         bool           `xml:"bareMetal"`
	Hypervisor        string         `xml:"hypervisor,omitempty"`
	NetworkInfo       networkInfoXML `xml:"networkInfo"`
}

type networkInfoXML struct {
	MaximumNetworkInterfaces  int              `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards       int              `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   int              `xml:"defaultNetworkCardIndex"`
	NetworkCards              []networkCardXML `xml:"networkCards>item"`
	Ipv4AddressesPerInterface int              `xml:"ipv4AddressesPerInterface"`
	Ipv6AddressesPerInterface int              `xml:"ipv6AddressesPerInterface"`
	Ipv6Supported             bool             `xml:"ipv6Supported"`
	EnaSupport                string           `xml:"enaSupport"`
}

type networkCardXML struct {
	NetworkCardIndex         int `xml:"networkCardIndex"`
	MaximumNetworkInterfaces int `xml:"maximumNetworkInterfaces"`
}

type describeSubnetsResp struct {
	respMeta
	Subnets   []subnetXML `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

type subnetXML struct {
	SubnetID                string          `xml:"subnetId"`
	SubnetArn               string          `xml:"subnetArn"`
	State                   string          `xml:"state"`
	OwnerID                 string          `xml:"ownerId"`
	VpcID                   string          `xml:"vpcId"`
	CidrBlock               string          `xml:"cidrBlock"`
	AvailableIPAddressCount int             `xml:"availableIpAddressCount"`
	AvailabilityZone        string          `xml:"availabilityZone"`
	DefaultForAz            bool            `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool            `xml:"mapPublicIpOnLaunch"`
	Ipv6CidrBlocks          []subnetIPv6XML `xml:"ipv6CidrBlockAssociationSet>item"`
	AssignIpv6OnCreation    bool            `xml:"assignIpv6AddressOnCreation"`
	Tags                    []tagXML        `xml:"tagSet>item"`
}
